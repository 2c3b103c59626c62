"""`brain bench cognibrain` at toy size: it loads memories and rules, prints figures and cleans up."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.bench import cognibrain
from knowledge.guard_models import GuardPattern
from knowledge.models import KnowledgeItem
from projects.models import User
from tests.conftest import Tenant
from tests.support.bench import bench_report


@pytest.mark.django_db(transaction=True)
def test_bench_cognibrain_runs_and_cleans_up(capsys: pytest.CaptureFixture[str], small_corpus: Path,
                                            tenant_a: Tenant) -> None:
    killed = User.objects.create(email="cognibrain-0123456789@bench.invalid")  # a run killed before its cleanup
    KnowledgeItem.objects.create(owner=killed, type="rule", content="a row the killed run loaded")
    report = bench_report(cognibrain, ["--memories", "200", "--rules", "120", "--calls", "6", "--distinct", "20",
                                       "--json", "--corpus", str(small_corpus)], capsys)
    figures = report["figures"]
    assert report["cached"] is True  # the loaded rows analysed and read into the cache, as a serving brain holds them
    assert set(figures) == {"context", "baseline_retrieve", "guard_10k_memories", "guard_10k_rules",
                            "guard_10k_rules_deterministic", "baseline_guard_no_rules", "outcome"}
    assert all(f["n"] == 6 and 0 <= f["p50_ms"] <= f["p95_ms"] for f in figures.values()), figures
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert not KnowledgeItem.objects.exists() and not GuardPattern.objects.exists()
    assert User.objects.filter(pk=tenant_a.user.pk).exists()  # another tenant on the same database stays
