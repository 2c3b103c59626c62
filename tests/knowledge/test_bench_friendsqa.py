"""The FriendsQA reader makes haystacks of scenes, stores every utterance behind its speaker's name in the words
as written, and scores each question on the utterances its own answers were marked in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brain.bench import friendsqa
from brain.bench.dialogue import is_dialogue
from brain.bench.friendsqa import detokenize, is_friendsqa, load_friendsqa
from brain.bench.memorybank import is_memorybank
from brain.bench.topicalchat import is_topicalchat


def _scene(title: str, utterances: list[tuple[str, str]], qas: list[dict[str, object]]) -> dict[str, object]:
    rows = [{"uid": n, "speakers": [who] if who else [], "utterance": text} for n, (who, text) in enumerate(utterances)]
    return {"title": title, "paragraphs": [{"utterances:": rows, "qas": qas}]}


def _qa(qid: str, question: str, *uids: int) -> dict[str, object]:
    return {"id": qid, "question": question,
            "answers": [{"answer_text": "x", "utterance_id": uid, "is_speaker": False} for uid in uids]}


DATA = {"version": "1", "data": [
    _scene("s01_e01_c01", [("#NOTE#", "[ Scene : Central Perk . ]"), ("Ross Geller", "I do n't like the name Jordie ."),
                           ("Carol Willick", "We 're gon na call him Ben .")],
           [_qa("s01_e01_c01_What", "What will they call the baby ?", 2),
            _qa("s01_e01_c01_Where_Paraphrased", "Where are they sitting ?", 0, 0),
            _qa("s01_e01_c01_Who", "Who dislikes a name ?", 1, 2)]),
    _scene("s01_e01_c02", [("Joey Tribbiani", "How you doin' ?")], [_qa("s01_e01_c02_Why", "Why ?", 9)]),
    _scene("s01_e01_c03", [("Monica Geller", "Welcome to the kitchen .")],
           [_qa("s01_e01_c03_Where", "Where is Monica ?", 0)]),
]}


@pytest.fixture
def scenes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(friendsqa, "SESSIONS", 2)  # three scenes: two haystacks, of two and one
    path = tmp_path / "friendsqa_dev.json"
    path.write_text(json.dumps(DATA))
    return path


def test_detokenize_joins_the_transcripts_tokens_back() -> None:
    assert detokenize("I do n't know , I 'm gon na go ( maybe ) .") == "I don't know, I'm gonna go (maybe)."
    assert detokenize("It 's here !") == "It's here!"


def test_the_file_is_told_apart_from_the_other_sets(scenes: Path) -> None:
    assert is_friendsqa(scenes)
    assert not (is_dialogue(scenes) or is_memorybank(scenes) or is_topicalchat(scenes))


def test_each_question_is_scored_on_its_own_utterances(scenes: Path) -> None:
    records = load_friendsqa(scenes)
    by_question = {r["question"]: r for r in records}
    # "Why?" points at an utterance the scene does not have: no evidence, no question.
    assert set(by_question) == {"What will they call the baby?", "Where are they sitting?",
                                "Who dislikes a name?", "Where is Monica?"}
    baby = by_question["What will they call the baby?"]
    assert baby["question_type"] == "what"
    assert baby["haystack_session_ids"] == ["h0:s01_e01_c01", "h0:s01_e01_c02"]
    assert [t["content"] for t in baby["haystack_sessions"][0]] == [
        "Scene: [Scene: Central Perk.]", "Ross Geller: I don't like the name Jordie.",
        "Carol Willick: We're gonna call him Ben."]
    assert baby["evidence_turns"] == [["h0:s01_e01_c01", 2]]
    assert by_question["Who dislikes a name?"]["evidence_turns"] == [["h0:s01_e01_c01", 1], ["h0:s01_e01_c01", 2]]
    assert by_question["Where are they sitting?"]["question_type"] == "where"  # the paraphrase keeps its wh-word
    monica = by_question["Where is Monica?"]
    assert monica["haystack_session_ids"] == ["h1:s01_e01_c03"] and monica["answer_session_ids"] == ["h1:s01_e01_c03"]
