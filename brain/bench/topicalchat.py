"""Topical-Chat's conversations (`conversations/*.json`, Amazon, CDLA-Sharing-1.0) as LongMemEval-shaped records.

Each file maps a conversation id to its `content`: ~22 turns of ~20 words between `agent_1` and `agent_2`,
two crowd workers chatting about a topic. Grouped in file order, `SESSIONS` conversations make one haystack
of dated sessions between two named speakers: the shape of a long multi-session chat (about 27 sessions of
15-35 short turns, every turn behind its speaker's name) and of an agent's event log (short lines behind a
shared prefix). The speakers get one pair of names per haystack, so a name says nothing about the session.

Questions are built from the chats the way MemoryBank's are (`brain/bench/memorybank.py`): a turn's asking
sentences, answered by the other speaker's next turn, give one question; that turn is its evidence; the
asking sentences are cut out of the stored turn. An ask of fewer than `MIN_WORDS` words ("You?", "Why?") or
an answer of fewer than `MIN_WORDS` ("Yes, LOL.") carries nothing to find, so it gives no question. Types:
`did-you-know` (a trivia ask, "did you know that …?", whose answer often only reacts to it) and `open` (any
other ask: opinions, preferences, facts).
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from brain.bench.lme import json_object
from brain.bench.memorybank import asked_records, asked_session

SESSIONS = 27  # conversations per haystack
MIN_WORDS = 5  # the fewest words of a question and of its evidence turn (the speaker's name not counted)
_NAMES = ("Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Gray", "Harper", "Indigo", "Jordan",
          "Kendall", "Logan", "Morgan", "Noel", "Oakley", "Parker", "Quinn", "Reese", "Sawyer", "Taylor",
          "Umber", "Val", "Wren", "Xen", "Yael", "Zion", "Arden", "Briar", "Cameron", "Dakota",
          "Ellis", "Frankie", "Gale", "Hollis", "Jessie", "Kai", "Lane", "Marlow", "Nico", "Oren")
_TRIVIA = re.compile(r"^(?:did|do|have) you (?:ever )?(?:know|knew|hear|heard|realize|realise)\b", re.IGNORECASE)
_START = date(2023, 1, 2)


def is_topicalchat(path: Path) -> bool:
    """A JSON object whose values hold a `content` list of turns with `message` and `agent`."""
    data = json_object(path)
    return bool(data) and all(
        isinstance(v, dict) and isinstance(v.get("content"), list)
        and all(isinstance(t, dict) and "message" in t and "agent" in t for t in v["content"])
        for v in data.values())


def load_topicalchat(path: Path) -> list[dict[str, Any]]:
    """One record per question, haystacks in file order, questions in chat order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversations = list(data.items())
    records: list[dict[str, Any]] = []
    for index, start in enumerate(range(0, len(conversations), SESSIONS)):
        records += _haystack(index, conversations[start:start + SESSIONS])
    return records


def _haystack(index: int, conversations: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    names = {"agent_1": _NAMES[(2 * index) % len(_NAMES)], "agent_2": _NAMES[(2 * index + 1) % len(_NAMES)]}
    ids, dates, sessions, asked = [], [], [], []
    for day, (conversation_id, conversation) in enumerate(conversations):
        sid = f"h{index}:{conversation_id}"
        turns = [(names.get(str(t["agent"]), str(t["agent"])), str(t["message"])) for t in conversation["content"]]
        stored, questions = asked_session(sid, turns, kind=_kind, role=lambda s: _role(s, names))
        ids.append(sid)
        dates.append((_START + timedelta(days=30 * index + day)).strftime("%Y/%m/%d (%a) 10:00"))
        sessions.append(stored)
        asked += questions
    kept = [q for q in asked if len(q[1].split()) >= MIN_WORDS and len(q[2].split()) >= MIN_WORDS]
    return asked_records(f"h{index}", ids, dates, sessions, kept)


def _kind(_speaker: str, question: str) -> str:
    return "did-you-know" if _TRIVIA.match(question) else "open"


def _role(speaker: str, names: dict[str, str]) -> str:
    return "user" if speaker == names["agent_1"] else "assistant"
