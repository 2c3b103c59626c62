"""`brain bench retrieval`: session-search quality and latency on LongMemEval records.

Each distinct haystack becomes a fresh project of a throw-away bench user; every haystack session is
opened with `session_start` and every turn logged as one event with `session_events_log_many` (the
services behind the MCP tools), then each question runs through `session_search` (the selector behind
`brain_session_search`) once per mode. The bench user and its data are deleted at the end (`--keep`
keeps them).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from brain.bench.baselines import BM25, Cosine, sessions_by_best_turn
from brain.bench.dialogue import is_dialogue, load_dialogue
from brain.bench.friendsqa import is_friendsqa, load_friendsqa
from brain.bench.fusion_dump import dump_line
from brain.bench.lme import KEYS, Group, Tally, groups_of, load, share_found
from brain.bench.memorybank import is_memorybank, load_memorybank
from brain.bench.topicalchat import is_topicalchat, load_topicalchat
from brain.progress import progress

HELP = "measure session-search recall and latency on LongMemEval records (hybrid, fts, vector)"
MODES = ("hybrid", "fts", "vector")
# Plain counterparts computed in the same run over the same turns (brain/bench/baselines.py).
BASELINES = ("bm25", "cosine")
BASELINE_DEPTH = 50  # turns a baseline ranks, as many as the engine's candidate lists


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", required=True, type=Path,
                        help="LongMemEval JSON (.json or .json.gz), or a dialogue set: a directory of "
                             "REALTALK-style conversation files (or one such file), or MemoryBank's "
                             "memory_bank_en.json or a Topical-Chat conversations file (questions built from "
                             "their chats, brain/bench/memorybank.py, brain/bench/topicalchat.py), or a FriendsQA "
                             "file (brain/bench/friendsqa.py)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--per-type", type=int, default=None,
                        help="only the first N questions of each question type (a stratified subset, file order)")
    parser.add_argument("--per-conversation", type=int, default=None,
                        help="dialogue sets: N questions drawn at random (fixed seed) from each conversation")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--keep", action="store_true", help="keep the bench user and its projects")
    parser.add_argument("--reuse", metavar="EMAIL", help="query the data a --keep run left (skips ingest)")
    parser.add_argument("--dump", metavar="PATH", type=Path,
                        help="also write each question's full-text and vector lists (ranks, scores) and the hybrid "
                             "ranking as JSON lines (.gz: compressed), for offline fusion replay "
                             "(brain/bench/fusion_dump.py)")
    parser.add_argument("--dump-depth", metavar="N", type=int, default=0,
                        help="with --dump: each list N rows deep instead of the fusion's candidates (N at least the "
                             "haystack's turns dumps every row's score in both lists)")


def _date(text: str | None) -> datetime:
    for fmt in ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(text or "", fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return datetime.now(UTC)


def _ingest(user: Any, group: Group, index: int, progress: Any) -> tuple[Any, dict[Any, tuple[str, int]]]:
    from projects.services.accounts import project_ensure_named
    from sessions.services.events import EventDraft, session_events_ingest, session_start

    project, _ = project_ensure_named(user=user, name=f"longmemeval {index}")
    event_keys: dict[Any, tuple[str, int]] = {}
    batches, sids = [], []
    for position, (sid, turns) in enumerate(zip(group.haystack_ids, group.sessions, strict=True)):
        started = _date(group.dates[position] if position < len(group.dates) else None)
        session = session_start(user=user, project=project, client_type="longmemeval", started_at=started)
        drafts = [EventDraft("turn", t["content"], {"role": t["role"], "turn": n, "haystack_session": sid}, started)
                  for n, t in enumerate(turns)]
        batches.append((session, drafts))
        sids.append(sid)
        event_keys[session.id] = (sid, -1)
    # One bulk ingest per haystack: its texts are embedded a chunk ahead of the inserts, so the model and the
    # database's index work overlap (docs/benchmarks.md, issue 17, "Eighth pass").
    for sid, events in zip(sids, session_events_ingest(batches=batches), strict=True):
        for n, event in enumerate(events):
            event_keys[event.id] = (sid, n)
        progress.update(len(events))
    return project, event_keys


def _stored(user: Any, index: int) -> tuple[Any, dict[Any, tuple[str, int]]]:
    """The project and event keys a previous `--keep` run stored for group `index`."""
    from projects.models import Project
    from sessions.models import SessionEvent

    project = Project.objects.get(org__personal_for=user, name=f"longmemeval {index}")
    keys: dict[Any, tuple[str, int]] = {}
    for event in SessionEvent.objects.filter(project=project, user=user).only("id", "session_id", "payload"):
        sid = event.payload["haystack_session"]
        keys[event.id] = (sid, event.payload["turn"])
        keys[event.session_id] = (sid, -1)
    return project, keys


def _evidence(question: dict[str, Any]) -> tuple[set[tuple[str, int]], set[str]]:
    """The question's own evidence: its `evidence_turns` (dialogue sets) or the `has_answer` turns of its
    own copy of the haystack (LongMemEval marks them per question), and its `answer_session_ids`."""
    if "evidence_turns" in question:
        turns = {(str(sid), int(n)) for sid, n in question["evidence_turns"]}
    else:
        turns = {
            (sid, n) for sid, session in zip(question["haystack_session_ids"], question["haystack_sessions"],
                                              strict=True)
            for n, turn in enumerate(session) if turn.get("has_answer")
        }
    return turns, set(question.get("answer_session_ids") or [])


def _score(tally: Tally, qtype: str, evidence: tuple[set[Any], set[str]], turns: list[Any],
           sessions: list[str]) -> None:
    evidence_turns, evidence_sessions = evidence
    if evidence_turns:
        tally.add(qtype, "turn_recall@5", share_found(evidence_turns, turns, 5))
        tally.add(qtype, "turn_recall@10", share_found(evidence_turns, turns, 10))
    if evidence_sessions:
        tally.add(qtype, "session_recall@5", share_found(evidence_sessions, sessions, 5))
        tally.add(qtype, "session_recall@10", share_found(evidence_sessions, sessions, 10))


def _evaluate(principal: Any, project: Any, group: Group, keys: dict[Any, tuple[str, int]],
              tallies: dict[str, Tally], dump: IO[str] | None = None, dump_depth: int = 0) -> None:
    from knowledge.embeddings import memo_clear
    from sessions.selectors.search import session_search

    plain = _baselines(project, group, keys)
    for question in group.questions:
        evidence = _evidence(question)
        qtype = question["question_type"]
        for mode in MODES:
            memo_clear()  # each mode pays for the query embedding, as a fresh query would
            start = time.perf_counter()
            result = session_search(principal=principal, query=question["question"], limit=10,
                                    project_id=project.id, mode=mode)
            tallies[mode].latencies_ms.append((time.perf_counter() - start) * 1000)
            turns_ranked = [keys[e.id] for e in result.events]
            _score(tallies[mode], qtype, evidence, turns_ranked, [keys[s.session_id][0] for s in result.sessions])
            if dump is not None and mode == "hybrid":
                dump.write(json.dumps(dump_line(principal, project, question, keys, result, evidence,
                                                 dump_depth)) + "\n")
        for name, ranked in _baseline_rankings(plain, question["question"]).items():
            _score(tallies[name], qtype, evidence, ranked, sessions_by_best_turn(ranked))


def _baselines(project: Any, group: Group, keys: dict[Any, tuple[str, int]]) -> tuple[BM25, Cosine]:
    """BM25 over the haystack's turn texts and exact cosine over the vectors the engine stored for them."""
    from sessions.models import SessionEvent

    texts = [((sid, n), turn["content"]) for sid, session in zip(group.haystack_ids, group.sessions, strict=True)
             for n, turn in enumerate(session)]
    vectors = [(keys[event_id], vector) for event_id, vector in SessionEvent.objects.filter(
        project=project, embedding__isnull=False).values_list("id", "embedding")]
    return BM25(texts), Cosine(vectors)


def _baseline_rankings(plain: tuple[BM25, Cosine], query: str) -> dict[str, list[Any]]:
    from knowledge.embeddings import embed_query

    bm25, cosine = plain
    vector, _ = embed_query(query)
    return {"bm25": bm25.ranked(query, BASELINE_DEPTH), "cosine": cosine.ranked(vector, BASELINE_DEPTH)}


def run(args: argparse.Namespace) -> int:
    from projects.scope import Principal
    from projects.selectors.accounts import user_by_email
    from projects.services.accounts import user_create

    if not args.input.exists():
        print(f"brain: no such file {args.input}; pass a LongMemEval JSON file or a dialogue directory with --input",
              file=sys.stderr)
        return 2
    if args.dump is not None and not args.dump.parent.is_dir():
        print(f"brain: no such directory {args.dump.parent} for --dump", file=sys.stderr)
        return 2
    dataset, records = _records(args)
    groups = groups_of(records)
    fresh = f"bench-{uuid.uuid4().hex[:10]}@bench.invalid"
    user = user_by_email(email=args.reuse) if args.reuse else user_create(email=fresh)
    principal = Principal(user=user)
    tallies = {mode: Tally() for mode in (*MODES, *BASELINES)}
    total_turns = sum(len(t) for g in groups for s in g.sessions for t in [s])
    ingest_s = 0.0
    dump = _open_dump(args.dump)
    try:
        with progress(total=total_turns, unit="turn", desc="ingest") as bar:
            for index, group in enumerate(groups):
                start = time.perf_counter()
                project, keys = _stored(user, index) if args.reuse else _ingest(user, group, index, bar)
                ingest_s += time.perf_counter() - start
                _evaluate(principal, project, group, keys, tallies, dump, args.dump_depth)
                bar.set_postfix_str(f"questions {sum(len(g.questions) for g in groups[:index + 1])}/{len(records)}")
    finally:
        if dump is not None:
            dump.close()
        if not (args.keep or args.reuse):
            user.delete()
        else:
            print(f"bench data kept: --reuse {user.email}", file=sys.stderr)
    report = {
        "modes": {mode: tallies[mode].summary() for mode in (*MODES, *BASELINES)},
        "dataset": dataset,
        "questions": len(records), "haystacks": len(groups), "turns": total_turns,
        "ingest_turns_per_s": round(total_turns / ingest_s, 1) if ingest_s and not args.reuse else None,
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def _open_dump(path: Path | None) -> IO[str] | None:
    if path is None:
        return None
    return gzip.open(path, "wt", encoding="utf-8") if path.suffix == ".gz" else path.open("w", encoding="utf-8")


def _records(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The dataset's name and its LongMemEval-shaped records (one per question)."""
    if is_memorybank(args.input):
        return "memorybank", load_memorybank(args.input, args.limit)
    if is_topicalchat(args.input):
        return "topicalchat", per_type(load_topicalchat(args.input), args.per_type)[: args.limit or None]
    if is_friendsqa(args.input):
        return "friendsqa", per_type(load_friendsqa(args.input), args.per_type)[: args.limit or None]
    if is_dialogue(args.input):
        return "dialogue", load_dialogue(args.input, args.limit, args.per_conversation)
    return "longmemeval", per_type(load(args.input, None), args.per_type)[: args.limit or None]


def per_type(records: list[dict[str, Any]], n: int | None) -> list[dict[str, Any]]:
    """The first `n` records of each question type, in file order (all of them when `n` is None)."""
    if n is None:
        return records
    seen: dict[str, int] = {}
    kept = []
    for record in records:
        seen[record["question_type"]] = seen.get(record["question_type"], 0) + 1
        if seen[record["question_type"]] <= n:
            kept.append(record)
    return kept


def render(report: dict[str, Any]) -> str:
    lines = [f"{report['dataset']}: {report['questions']} questions, {report['haystacks']} haystacks, "
             f"{report['turns']} turns, ingest {report['ingest_turns_per_s']} turns/s", ""]
    header = f"{'mode':<8} {'scope':<27} " + " ".join(f"{k:>17}" for k in KEYS)
    lines += [header, "-" * len(header)]
    for mode, data in report["modes"].items():
        rows = [("overall", data["overall"]), *data["by_type"].items()]
        for name, values in rows:
            cells = " ".join(f"{_fmt(values[k]):>17}" for k in KEYS)
            lines.append(f"{mode:<8} {name:<27} {cells}")
    lines.append("")
    for mode, data in report["modes"].items():
        if mode in BASELINES:
            continue
        lines.append(f"{mode:<8} query ms p50 {data['query_ms']['p50']}  p95 {data['query_ms']['p95']}")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
