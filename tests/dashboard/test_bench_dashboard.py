"""`brain bench dashboard` at toy size: it builds the data, times every page, prints figures, cleans up."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.bench import dashboard
from knowledge.models import KnowledgeItem
from projects.models import User
from sessions.models import Session
from tests.support.bench import bench_report, run_bench


@pytest.mark.django_db(transaction=True)
def test_bench_dashboard_runs_and_cleans_up(capsys: pytest.CaptureFixture[str], small_corpus: Path) -> None:
    report = bench_report(dashboard, ["--items", "60", "--sessions", "5", "--requests", "2", "--rules", "20",
                                      "--json", "--corpus", str(small_corpus)], capsys)
    assert set(report["pages"]) >= {"overview", "knowledge search", "sessions list", "review"}
    assert all(page["p95_ms"] >= page["p50_ms"] > 0 and page["queries"] > 0 for page in report["pages"].values())
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert not KnowledgeItem.objects.exists() and not Session.objects.exists()


def test_bad_arguments_are_refused_before_anything_is_written(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_bench(dashboard, ["--items", "0"]) == 2
    assert "--items >= 10" in capsys.readouterr().err
