"""MemoryBank's English chats (`eval_data/en/memory_bank_en.json`, MIT) as LongMemEval-shaped records.

The file maps each of 15 users to a `history` of daily sessions (`"2023-04-27": [{query, response}, ...]`)
between the user and an "AI companion": short, dated, multi-session chat. It ships probing questions but
no evidence, so questions are built from the chats themselves, deterministically:

- a turn that asks something (its sentences ending in "?") and is answered by the other speaker's next turn
  in the same session gives one question: the asking sentences, joined by a space;
- that next turn is the question's evidence (turn level) and its session the evidence session;
- the asking sentences are cut out of the stored turn (the rest of the turn stays; a turn with nothing
  left is not stored), so the question's own words are never in the haystack.

Each user's history is one haystack (that user's memory); every turn is stored as "Name: text", the user's
name or "AI companion". Question types: `asked-by-user` (the answer is the companion's advice or
recommendation) and `asked-by-companion` (the answer is a fact the user told).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from brain.bench.lme import json_object

COMPANION = "AI companion"
# A sentence is the shortest run of text ending in ".", "!" or "?" (quotes and spaces after it included).
_CLOSERS = "\"')\u201d\u2019"  # straight and curly closing quotes, a closing parenthesis
_SENTENCE = re.compile(rf"[^.!?]*[.!?]+[{_CLOSERS}]*\s*|[^.!?]+$")


def is_memorybank(path: Path) -> bool:
    """A JSON object whose values hold a `history` of dated sessions."""
    data = json_object(path)
    return bool(data) and all(isinstance(v, dict) and isinstance(v.get("history"), dict) for v in data.values())


def load_memorybank(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """One record per question, users in file order, questions in chat order; then the first `limit`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    records: list[dict[str, Any]] = []
    for user, entry in data.items():
        records += _user_records(str(entry.get("name") or user), entry["history"])
    return records[:limit] if limit else records


def split_question(text: str) -> tuple[str, str]:
    """The turn's asking sentences (those ending in "?") and the rest of the turn, both whitespace-normalised."""
    asking: list[str] = []
    rest: list[str] = []
    for sentence in _SENTENCE.findall(" ".join(text.split())):
        (asking if sentence.rstrip(" " + _CLOSERS).endswith("?") else rest).append(sentence.strip())
    return " ".join(s for s in asking if s), " ".join(s for s in rest if s)


def _user_records(name: str, history: dict[str, list[dict[str, str]]]) -> list[dict[str, Any]]:
    ids, dates, sessions, asked = [], [], [], []
    for day in sorted(history):
        sid = f"{name}:{day}"
        turns = [(speaker, text) for pair in history[day]
                 for speaker, text in ((name, pair.get("query", "")), (COMPANION, pair.get("response", "")))]
        stored, questions = _session(sid, turns)
        ids.append(sid)
        dates.append(datetime.strptime(day, "%Y-%m-%d").strftime("%Y/%m/%d (%a) %H:%M"))
        sessions.append(stored)
        asked += questions
    return asked_records(name, ids, dates, sessions, asked)


Asked = tuple[str, str, str, tuple[str, int]]  # type, question, answer text, evidence (session id, position)


def asked_records(prefix: str, ids: list[str], dates: list[str], sessions: list[list[dict[str, str]]],
                  asked: list[Asked]) -> list[dict[str, Any]]:
    """One record per asked question of a haystack, each scored on its own answering turn."""
    return [{
        "question_id": f"{prefix}:q{i}", "question_type": qtype, "question": question, "answer": answer,
        "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions,
        "answer_session_ids": [evidence[0]], "evidence_turns": [list(evidence)],
    } for i, (qtype, question, answer, evidence) in enumerate(asked)]


def _session(sid: str, turns: list[tuple[str, str]]) -> tuple[list[dict[str, str]], list[Asked]]:
    return asked_session(sid, turns, kind=lambda speaker, _question: (
        "asked-by-companion" if speaker == COMPANION else "asked-by-user"),
        role=lambda speaker: "assistant" if speaker == COMPANION else "user")


def asked_session(sid: str, turns: list[tuple[str, str]], kind: Callable[[str, str], str],
                  role: Callable[[str], str]) -> tuple[list[dict[str, str]], list[Asked]]:
    """The session's stored turns ("Name: text", asking sentences cut) and its questions with their evidence
    (session id, position of the answering turn among the stored turns). `kind(speaker, question)` types a
    question; `role(speaker)` is a turn's role."""
    kept: list[tuple[str, str]] = []
    pending: list[tuple[str, str, int]] = []  # (type, question, index in `turns` of the answering turn)
    position: dict[int, int] = {}
    for index, (speaker, text) in enumerate(turns):
        question, rest = split_question(text)
        if question and index + 1 < len(turns) and turns[index + 1][0] != speaker:
            pending.append((kind(speaker, question), question, index + 1))
            text = rest
        if text.strip():
            position[index] = len(kept)
            kept.append((speaker, " ".join(text.split())))
    stored = [{"role": role(s), "content": f"{s}: {t}"} for s, t in kept]
    questions = [(kind, q, turns[target][1], (sid, position[target])) for kind, q, target in pending
                 if target in position]
    return stored, questions
