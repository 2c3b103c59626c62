"""`brain bench retrieval` and `brain bench retrieval-scale` at toy size: real services, real figures, no leftovers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brain.bench import retrieval, scale
from knowledge.models import KnowledgeItem
from projects.models import User
from sessions.models import SessionEvent
from tests.conftest import Tenant
from tests.support.bench import bench_report, run_bench

FILLER = ["Can you suggest a weekend hiking route?", "Sure, try the ridge trail loop, about 12 km with views.",
          "What should I pack for rain?", "A shell jacket, spare socks and a dry bag for your phone."]


def _record(qid: str, question: str, evidence: str, qtype: str) -> dict[str, Any]:
    sessions = [[{"role": "user", "content": t} for t in FILLER[:2]],
                [{"role": "user", "content": evidence, "has_answer": True},
                 {"role": "assistant", "content": "Noted, thanks for telling me."}],
                [{"role": "user", "content": t} for t in FILLER[2:]]]
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": "x",
            "haystack_session_ids": [f"{qid}-s1", f"{qid}-s2", f"{qid}-s3"],
            "haystack_dates": ["2023/05/01 (Mon) 10:00"] * 3,
            "haystack_sessions": sessions, "answer_session_ids": [f"{qid}-s2"]}


@pytest.mark.django_db(transaction=True)
def test_bench_retrieval_reports_every_mode_and_cleans_up(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          tenant_b: Tenant) -> None:
    data = tmp_path / "lme.json"
    data.write_text(json.dumps([
        _record("q1", "Which saxophone brand did I buy?", "I finally bought a Yamaha saxophone last week.",
                "single-session-user"),
        _record("q2", "Where did my sister move to?", "My sister just moved to Lisbon for her new job.",
                "multi-session"),
    ]))
    report = bench_report(retrieval, ["--input", str(data), "--json"], capsys)
    assert set(report["modes"]) == {"hybrid", "fts", "vector"}
    assert report["questions"] == 2 == report["haystacks"]
    assert report["turns"] == 12 and report["ingest_turns_per_s"] > 0
    for mode in ("hybrid", "fts"):
        overall = report["modes"][mode]["overall"]
        assert overall["turn_recall@5"] == 1.0 and overall["session_recall@5"] == 1.0, mode
        assert set(report["modes"][mode]["by_type"]) == {"single-session-user", "multi-session"}
        assert report["modes"][mode]["query_ms"]["p95"] > 0
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert not SessionEvent.objects.exists()
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_bench_retrieval_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_bench(retrieval, ["--input", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.django_db(transaction=True)
def test_bench_retrieval_scale_measures_each_size_against_the_baseline(
        small_corpus: Path, capsys: pytest.CaptureFixture[str], tenant_b: Tenant) -> None:
    mine = KnowledgeItem.objects.create(owner=tenant_b.user, project=tenant_b.project, type="rule",
                                        content="A row of another tenant that the bench must leave alone")
    report = bench_report(scale, ["--items", "60,120", "--queries", "5", "--rules", "30", "--json",
                          "--corpus", str(small_corpus)], capsys)
    assert [size["items"] for size in report["sizes"]] == [60, 120]
    for size in report["sizes"]:
        for key in ("query_ms", "baseline_query_ms"):
            assert size[key]["p95"] >= size[key]["p50"] > 0
            assert size[key]["retrieval"] == ["hybrid"] and size[key]["source_hit@5"] > 0.5
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert list(KnowledgeItem.objects.all()) == [mine]
    rendered = scale.render(report)
    assert "x prev" in rendered and "base p95" in rendered
