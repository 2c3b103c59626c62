"""Multi-session dialogue sets (REALTALK's `data/*.json` layout) as LongMemEval-shaped records.

A conversation file holds `session_<n>` lists of turns (`speaker`, `clean_text` or `text`, `dia_id`),
`session_<n>_date_time` stamps and a `qa` list (`question`, `answer`, `evidence`: dia ids, `category`).
Each conversation becomes one haystack; every turn is stored as "Speaker: text" (the way chat logs and
agent events read: a short line behind a shared prefix); each question's evidence turns are its own
`evidence` dia ids, so questions about the same conversation are scored on different turns.
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime
from pathlib import Path
from typing import Any

_SESSION = re.compile(r"session_(\d+)")


def is_dialogue(path: Path) -> bool:
    """A directory of conversation files, or one conversation file (a JSON object with `qa`)."""
    if path.is_dir():
        return True
    if path.suffix != ".json":
        return False
    with path.open(encoding="utf-8") as fh:
        head = fh.read(1).strip()
    return head == "{" and "qa" in json.loads(path.read_text(encoding="utf-8"))


def load_dialogue(path: Path, limit: int | None, per_conversation: int | None, seed: int = 16) -> list[dict[str, Any]]:
    """LongMemEval-shaped records, one per question: `per_conversation` questions drawn at random (fixed seed)
    from each conversation, then the first `limit` records."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    records: list[dict[str, Any]] = []
    for file in files:
        records += _conversation(file, per_conversation, random.Random(f"{seed}:{file.name}"))
    return records[:limit] if limit else records


def _conversation(file: Path, per_conversation: int | None, rng: random.Random) -> list[dict[str, Any]]:
    data = json.loads(file.read_text(encoding="utf-8"))
    numbers = sorted(int(m.group(1)) for key in data if (m := _SESSION.fullmatch(key)))
    ids = [f"{file.stem}:s{n}" for n in numbers]
    sessions: list[list[dict[str, Any]]] = []
    where: dict[str, tuple[str, int]] = {}
    for sid, n in zip(ids, numbers, strict=True):
        turns = data[f"session_{n}"]
        for position, turn in enumerate(turns):
            where[str(turn.get("dia_id"))] = (sid, position)
        sessions.append([{"role": str(t.get("speaker", "")), "content": _line(t)} for t in turns])
    dates = [_date(data.get(f"session_{n}_date_time")) for n in numbers]
    questions = [q for q in data.get("qa", []) if q.get("question") and q.get("evidence")]
    if per_conversation is not None and per_conversation < len(questions):
        questions = rng.sample(questions, per_conversation)
    return [_record(file.stem, i, q, where, ids, dates, sessions) for i, q in enumerate(questions)]


def _record(stem: str, index: int, question: dict[str, Any], where: dict[str, tuple[str, int]], ids: list[str],
            dates: list[str], sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    evidence = sorted({where[str(e)] for e in question["evidence"] if str(e) in where})
    return {
        "question_id": f"{stem}:q{index}", "question_type": f"category-{question.get('category', 'none')}",
        "question": str(question["question"]), "answer": str(question.get("answer", "")),
        "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions,
        "answer_session_ids": sorted({sid for sid, _ in evidence}), "evidence_turns": [list(e) for e in evidence],
    }


def _line(turn: dict[str, Any]) -> str:
    text = " ".join(str(turn.get("clean_text") or turn.get("text") or "").split())
    return f"{turn.get('speaker', '')}: {text}"


def _date(stamp: Any) -> str:
    """`dd.mm.yyyy, HH:MM:SS` (REALTALK) as LongMemEval's `yyyy/mm/dd (Day) HH:MM`; anything else: empty."""
    match = re.match(r"(\d{2})\.(\d{2})\.(\d{4}), (\d{2}):(\d{2})", str(stamp or ""))
    if not match:
        return ""
    day, month, year, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute).strftime("%Y/%m/%d (%a) %H:%M")
