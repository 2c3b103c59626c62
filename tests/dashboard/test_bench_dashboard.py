"""`brain bench dashboard` at toy size: it builds the data, times every page, prints figures, cleans up (what a
killed run left too), and leaves the tenants' rows alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.bench import dashboard
from knowledge.models import KnowledgeItem
from projects.models import User
from sessions.models import Session
from tests.conftest import Tenant
from tests.support.bench import bench_report, run_bench


@pytest.mark.django_db(transaction=True)
def test_bench_dashboard_runs_and_cleans_up(capsys: pytest.CaptureFixture[str], small_corpus: Path,
                                            tenant_a: Tenant, tenant_b: Tenant) -> None:
    killed = User.objects.create(email="dashboard-0123456789@bench.invalid")  # a run killed before its cleanup
    KnowledgeItem.objects.create(owner=killed, type="rule", content="a row the killed run loaded")
    theirs = KnowledgeItem.objects.create(owner=tenant_b.user, project=tenant_b.project, type="rule",
                                          content="the other tenant's rule stays")
    report = bench_report(dashboard, ["--items", "60", "--sessions", "5", "--requests", "2", "--rules", "20",
                                      "--json", "--corpus", str(small_corpus)], capsys)
    assert set(report["pages"]) >= {"overview", "knowledge search", "sessions list", "review"}
    assert all(page["p95_ms"] >= page["p50_ms"] > 0 and page["queries"] > 0 for page in report["pages"].values())
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert list(KnowledgeItem.objects.values_list("pk", flat=True)) == [theirs.pk]
    assert not Session.objects.exists()
    assert User.objects.filter(pk__in=[tenant_a.user.pk, tenant_b.user.pk]).count() == 2


def test_bad_arguments_are_refused_before_anything_is_written(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_bench(dashboard, ["--items", "0"]) == 2
    assert "--items >= 10" in capsys.readouterr().err
