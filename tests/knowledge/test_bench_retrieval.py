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


TWO_QUESTIONS = [
    _record("q1", "Which saxophone brand did I buy?", "I finally bought a Yamaha saxophone last week.",
            "single-session-user"),
    _record("q2", "Where did my sister move to?", "My sister just moved to Lisbon for her new job.", "multi-session"),
]


@pytest.mark.django_db(transaction=True)
def test_bench_retrieval_reports_every_mode_and_cleans_up(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          tenant_b: Tenant) -> None:
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(TWO_QUESTIONS))
    report = bench_report(retrieval, ["--input", str(data), "--json"], capsys)
    assert set(report["modes"]) == {"hybrid", "fts", "vector", "bm25", "cosine"}
    assert report["questions"] == 2 == report["haystacks"]
    assert report["turns"] == 12 and report["ingest_turns_per_s"] > 0
    for mode in ("hybrid", "fts", "bm25"):
        overall = report["modes"][mode]["overall"]
        assert overall["turn_recall@5"] == 1.0 and overall["session_recall@5"] == 1.0, mode
        assert set(report["modes"][mode]["by_type"]) == {"single-session-user", "multi-session"}
    assert all(report["modes"][mode]["query_ms"]["p95"] > 0 for mode in ("hybrid", "fts", "vector"))
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
    killed = User.objects.create(email="scale-0123456789@bench.invalid")  # left by a run killed before its cleanup
    KnowledgeItem.objects.create(owner=killed, type="rule", content="a row the killed run loaded")
    report = bench_report(scale, ["--items", "60,120", "--queries", "5", "--rules", "30", "--json",
                          "--corpus", str(small_corpus)], capsys)
    assert [size["items"] for size in report["sizes"]] == [60, 120]
    for size in report["sizes"]:
        assert size["cached"] is True  # the rows and both search indexes read into the page cache
        for key in ("query_ms", "baseline_query_ms"):
            assert size[key]["p95"] >= size[key]["p50"] > 0
            assert size[key]["retrieval"] == ["hybrid"] and size[key]["source_hit@5"] > 0.5
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert list(KnowledgeItem.objects.all()) == [mine]
    rendered = scale.render(report)
    assert "x prev" in rendered and "base p95" in rendered


def _shared_haystack(qid: str, question: str, evidence_turn: int) -> dict[str, Any]:
    """Two questions over one haystack, each marking its own evidence turn (as LongMemEval does)."""
    turns = ["I adopted a grey cat called Pixel in March.", "Nice, cats are great company.",
             "My brother Tom runs a bakery in Porto.", "A bakery sounds lovely."]
    session = [{"role": "user", "content": t, **({"has_answer": True} if n == evidence_turn else {})}
               for n, t in enumerate(turns)]
    filler = [[{"role": "user", "content": t} for t in part] for part in (FILLER[:2], FILLER[2:])]
    return {"question_id": qid, "question_type": "single-session-user", "question": question, "answer": "x",
            "haystack_session_ids": ["h-1", "h-2", "h-3"], "haystack_dates": ["2023/05/01 (Mon) 10:00"] * 3,
            "haystack_sessions": [filler[0], session, filler[1]], "answer_session_ids": ["h-2"]}


@pytest.mark.django_db(transaction=True)
def test_bench_retrieval_scores_each_question_on_its_own_evidence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tenant_b: Tenant) -> None:
    """The second question shares the first one's haystack: scored against the first question's evidence
    turn (the cat), its full-text recall would be 0 at k = 1..2 instead of 1."""
    data = tmp_path / "shared.json"
    data.write_text(json.dumps([_shared_haystack("q1", "What is my cat called?", 0),
                                _shared_haystack("q2", "Which city is my brother's bakery in?", 2)]))
    report = bench_report(retrieval, ["--input", str(data), "--json"], capsys)
    assert report["haystacks"] == 1 and report["questions"] == 2
    for mode in ("fts", "bm25"):
        assert report["modes"][mode]["overall"]["turn_recall@5"] == 1.0, mode


def _conversation() -> dict[str, Any]:
    def turn(dia: str, speaker: str, text: str) -> dict[str, Any]:
        return {"speaker": speaker, "clean_text": text, "dia_id": dia}

    return {
        "name": {"speaker_1": "Ana", "speaker_2": "Ben"},
        "session_1": [turn("D1:1", "Ana", "Hey! How was your weekend?"),
                      turn("D1:2", "Ben", "Great, I ran my first half marathon in Lyon.")],
        "session_1_date_time": "29.12.2023, 22:42:04",
        "session_2": [turn("D2:1", "Ana", "I started pottery classes on Tuesdays."),
                      turn("D2:2", "Ben", "Pottery sounds relaxing, enjoy!")],
        "session_2_date_time": "03.01.2024, 18:00:00",
        "qa": [{"question": "Where did Ben run a half marathon?", "answer": "Lyon", "evidence": ["D1:2"],
                "category": 1},
               {"question": "What classes did Ana start?", "answer": "pottery", "evidence": ["D2:1"], "category": 2},
               {"question": "No evidence: skipped", "answer": "-", "category": 5}],
    }


@pytest.mark.django_db(transaction=True)
def test_bench_retrieval_reads_a_dialogue_set(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              tenant_b: Tenant) -> None:
    folder = tmp_path / "dialogue"
    folder.mkdir()
    (folder / "Chat_1_Ana_Ben.json").write_text(json.dumps(_conversation()))
    report = bench_report(retrieval, ["--input", str(folder), "--json"], capsys)
    assert report["dataset"] == "dialogue" and report["questions"] == 2 and report["turns"] == 4
    assert set(report["modes"]["fts"]["by_type"]) == {"category-1", "category-2"}
    for mode in ("hybrid", "fts", "bm25"):
        assert report["modes"][mode]["overall"]["turn_recall@5"] == 1.0, mode
    assert not SessionEvent.objects.exists()


def test_dialogue_records_carry_speaker_lines_and_their_own_evidence(tmp_path: Path) -> None:
    from brain.bench.dialogue import load_dialogue

    path = tmp_path / "Chat_1_Ana_Ben.json"
    path.write_text(json.dumps(_conversation()))
    first, second = load_dialogue(path, None, None)
    assert first["haystack_sessions"][0][1]["content"] == "Ben: Great, I ran my first half marathon in Lyon."
    assert first["evidence_turns"] == [["Chat_1_Ana_Ben:s1", 1]]
    assert first["answer_session_ids"] == ["Chat_1_Ana_Ben:s1"]
    assert second["evidence_turns"] == [["Chat_1_Ana_Ben:s2", 0]]
    assert first["haystack_dates"][0] == "2023/12/29 (Fri) 22:42"
    assert len(load_dialogue(path, None, 1)) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("candidates", "depth"), [(None, None), (3, 50)])
def test_bench_retrieval_dump_replays_to_the_engines_own_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], tenant_b: Tenant, settings: Any,
        candidates: int | None, depth: int | None) -> None:
    """`--dump` writes each question's two lists with their scores; fusing them in Python (`replay_hybrid`) gives
    the engine's hybrid events and sessions exactly, so an offline fusion experiment starts from the truth. Lists
    dumped deeper than the engine's (`--dump-depth`, here 6 turns a haystack against 3 candidates) are cut back to
    what it fused, the vector list re-ranked."""
    import gzip

    from brain.bench.fusion_dump import replay_hybrid

    settings.BRAIN_RETRIEVAL = {**settings.BRAIN_RETRIEVAL, "candidates": candidates}
    data = tmp_path / "lme.json"
    data.write_text(json.dumps(TWO_QUESTIONS))
    dump = tmp_path / "lists.jsonl.gz"
    deeper = ["--dump-depth", str(depth)] if depth else []
    bench_report(retrieval, ["--input", str(data), "--json", "--dump", str(dump), *deeper], capsys)
    with gzip.open(dump, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh]
    assert [line["question"] for line in lines] == ["Which saxophone brand did I buy?", "Where did my sister move to?"]
    for line in lines:
        assert line["fts"] and line["vector"] and line["evidence_turns"] == [[line["evidence_sessions"][0], 0]]
        assert [r["rank"] for r in line["vector"]] == list(range(1, len(line["vector"]) + 1))
        assert len(line["vector"]) == 6 and len(line["hybrid_turns"]) == (candidates or 6)
        assert set(line["standard"]) == {"vector_mu", "vector_sd", "fts_mu", "fts_sd"}
        assert all(-1.0 <= r["cosine"] <= 1.0 for r in line["fts"])
        assert all(-1.0 <= r["score"] <= 1.0 for r in line["vector"]) and all(r["score"] > 0 for r in line["fts"])
        turns, sessions = replay_hybrid(line)
        assert [list(t) for t in turns] == line["hybrid_turns"] and sessions[:10] == line["hybrid_sessions"]
    assert not SessionEvent.objects.exists()


def test_bench_retrieval_refuses_a_dump_into_a_missing_folder(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "lme.json"
    data.write_text("[]")
    assert run_bench(retrieval, ["--input", str(data), "--dump", str(tmp_path / "nope" / "lists.jsonl")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()
