"""The Topical-Chat reader groups conversations into haystacks of dated sessions between two named speakers
and builds questions from asking turns answered by the other speaker, each scored on its own answer turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brain.bench import topicalchat
from brain.bench.dialogue import is_dialogue
from brain.bench.memorybank import is_memorybank
from brain.bench.topicalchat import is_topicalchat, load_topicalchat


def _turn(agent: int, message: str) -> dict[str, str]:
    return {"message": message, "agent": f"agent_{agent}", "sentiment": "Neutral"}


CONVERSATIONS = {
    "t_one": {"config": "A", "content": [
        _turn(1, "Hello there. Did you know that a jiffy is an actual unit of time?"),
        _turn(2, "I had heard that a jiffy is one hundredth of a second, yes."),
        _turn(1, "You?"),
        _turn(2, "Yes, LOL."),
    ]},
    "t_two": {"config": "B", "content": [
        _turn(1, "I love old westerns. Which movie do you watch when it rains outside?"),
        _turn(2, "Usually The Good, the Bad and the Ugly with a big bowl of popcorn."),
    ]},
    "t_three": {"config": "A", "content": [
        _turn(2, "What is your favourite football team in the league?"),
        _turn(1, "The Green Bay Packers, ever since my grandfather took me to Lambeau."),
    ]},
}


@pytest.fixture
def chats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(topicalchat, "SESSIONS", 2)  # two conversations a haystack: t_three starts the second
    path = tmp_path / "valid_freq.json"
    path.write_text(json.dumps(CONVERSATIONS))
    return path


def test_the_file_is_told_apart_from_the_other_sets(chats: Path, tmp_path: Path) -> None:
    assert is_topicalchat(chats) and not is_memorybank(chats) and not is_dialogue(chats)
    other = tmp_path / "memory_bank_en.json"
    other.write_text(json.dumps({"Ana": {"history": {}}}))
    assert not is_topicalchat(other)


def test_questions_point_at_the_answering_turn_of_their_own_haystack(chats: Path) -> None:
    records = load_topicalchat(chats)
    by_question = {r["question"]: r for r in records}
    # "You?" and its answer "Yes, LOL." carry too few words to be a question.
    assert set(by_question) == {"Did you know that a jiffy is an actual unit of time?",
                                "Which movie do you watch when it rains outside?",
                                "What is your favourite football team in the league?"}
    jiffy = by_question["Did you know that a jiffy is an actual unit of time?"]
    assert jiffy["question_type"] == "did-you-know"
    assert jiffy["haystack_session_ids"] == ["h0:t_one", "h0:t_two"]
    assert jiffy["haystack_dates"][1] > jiffy["haystack_dates"][0]
    first = jiffy["haystack_sessions"][0]
    # The asking sentence left the stored turn; every turn sits behind its speaker's name.
    assert [t["content"] for t in first] == ["Avery: Hello there.",
                                             "Blake: I had heard that a jiffy is one hundredth of a second, yes.",
                                             "Blake: Yes, LOL."]
    assert jiffy["evidence_turns"] == [["h0:t_one", 1]] and jiffy["answer_session_ids"] == ["h0:t_one"]
    football = by_question["What is your favourite football team in the league?"]
    assert football["question_type"] == "open"
    assert football["haystack_session_ids"] == ["h1:t_three"]  # the second haystack, its own pair of names
    assert football["haystack_sessions"][0][0]["content"].startswith("Casey: The Green Bay Packers")


def test_no_question_leaves_its_words_in_the_haystack(chats: Path) -> None:
    records = load_topicalchat(chats)
    stored = [t["content"] for r in records for s in r["haystack_sessions"] for t in s]
    for record in records:
        assert all(record["question"] not in text for text in stored), record["question"]
