"""FriendsQA (Yang & Choi, SIGDIAL 2019; `dat/friendsqa_{dev,tst}.json`, Apache-2.0) as LongMemEval-shaped records.

Each scene of the sitcom transcript is a short multiparty dialogue (about 21 utterances of 14 words), and its
questions (what, who, when, where, why, how; each also asked a second time in other words) are answered by
spans of its utterances, whose ids the file gives. Scenes in file order, `SESSIONS` at a time, make one
haystack of dated sessions: a long multi-session chat about the same people, every turn behind its speaker's
name ("Ross Geller: …"), questions about facts and events of the chat that often name the people they are
about. Each question's evidence is the set of utterances its answers were marked in.

The file's text is tokenized ("do n't", "it 's", "here ."); it is joined back the way it was written so the
stored turns and the questions read like chat.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from brain.bench.lme import json_object

SESSIONS = 27  # scenes per haystack, about
SCENE = "Scene"  # the speaker of the transcript's stage directions (#NOTE#)
_START = date(2023, 1, 2)
_CLITIC = re.compile(r" (n't|'s|'re|'ve|'m|'ll|'d)\b", re.IGNORECASE)
_BEFORE = re.compile(r" ([.,!?;:%)\]])")
_AFTER = re.compile(r"([(\[$]) ")
_GONNA = re.compile(r"\b(gon|wan|got) (na|ta)\b", re.IGNORECASE)


def is_friendsqa(path: Path) -> bool:
    """A JSON object with `data`: scenes whose paragraphs hold `utterances:` and `qas`."""
    data = (json_object(path) or {}).get("data")
    return isinstance(data, list) and bool(data) and all(
        isinstance(p, dict) and "utterances:" in p and "qas" in p
        for scene in data for p in scene.get("paragraphs", [{}]))


def detokenize(text: str) -> str:
    """The transcript's tokenized text as written: "I do n't know ." -> "I don't know."."""
    text = " ".join(text.split())
    text = _CLITIC.sub(r"\1", text)
    text = _GONNA.sub(r"\1\2", text)
    return _AFTER.sub(r"\1", _BEFORE.sub(r"\1", text))


def load_friendsqa(path: Path) -> list[dict[str, Any]]:
    """One record per question, haystacks in file order; haystacks as even as `SESSIONS` allows."""
    scenes = [scene for scene in json.loads(path.read_text(encoding="utf-8"))["data"] if scene.get("paragraphs")]
    count = max(1, round(len(scenes) / SESSIONS))
    size = math.ceil(len(scenes) / count)
    records: list[dict[str, Any]] = []
    for index, start in enumerate(range(0, len(scenes), size)):
        records += _haystack(index, scenes[start:start + size])
    return records


def _haystack(index: int, scenes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = [f"h{index}:{scene['title']}" for scene in scenes]
    dates = [(_START + timedelta(days=40 * index + day)).strftime("%Y/%m/%d (%a) 20:00") for day in range(len(scenes))]
    sessions, questions = [], []
    for sid, scene in zip(ids, scenes, strict=True):
        paragraph = scene["paragraphs"][0]
        utterances = paragraph["utterances:"]
        position = {u["uid"]: n for n, u in enumerate(utterances)}
        sessions.append([{"role": "user", "content": f"{_speaker(u)}: {detokenize(u['utterance'])}"}
                         for u in utterances])
        for qa in paragraph["qas"]:
            evidence = sorted({(sid, position[a["utterance_id"]]) for a in qa["answers"]
                               if a.get("utterance_id") in position})
            if evidence and qa.get("question", "").strip():
                questions.append((qa, evidence))
    return [{
        "question_id": f"h{index}:{qa['id']}", "question_type": _kind(qa["id"]),
        "question": detokenize(qa["question"]), "answer": detokenize(qa["answers"][0].get("answer_text", "")),
        "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions,
        "answer_session_ids": sorted({sid for sid, _ in evidence}), "evidence_turns": [list(e) for e in evidence],
    } for qa, evidence in questions]


def _speaker(utterance: dict[str, Any]) -> str:
    names = [str(s) for s in utterance.get("speakers") or [] if str(s) != "#NOTE#"]
    return " and ".join(names) if names else SCENE


def _kind(question_id: str) -> str:
    """`s01_e23_c06_What_Paraphrased` -> `what`."""
    parts = question_id.split("_")
    wh = parts[-2] if parts[-1] == "Paraphrased" else parts[-1]
    return wh.lower()
