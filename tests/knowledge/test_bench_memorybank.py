"""The MemoryBank reader builds its questions deterministically from the chats: each asking turn answered by
the other speaker gives one question, its evidence is that answer, and the asking words leave the haystack."""

from __future__ import annotations

import json
from pathlib import Path

from brain.bench.dialogue import is_dialogue
from brain.bench.memorybank import is_memorybank, load_memorybank, split_question

CHATS = {
    "Ana": {"name": "Ana", "history": {
        "2023-05-02": [
            {"query": "I went hiking at Blue Ridge today.", "response": "Lovely! Did you see any wildlife there?"},
            {"query": "Yes, a family of deer near the lake.", "response": "That sounds peaceful."},
        ],
        "2023-05-01": [
            {"query": "Hi. Can you recommend a novel?", "response": "Try \"The Little Prince\", it is short."},
            {"query": "What else?", "response": "Pride and Prejudice."},
        ],
    }},
    "Ben": {"name": "Ben", "history": {
        "2023-05-01": [{"query": "Do you like jazz?", "response": "I enjoy reading about it. Do you play?"}],
    }},
}


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "memory_bank_en.json"
    path.write_text(json.dumps(CHATS))
    return path


def test_split_question_separates_the_asking_sentences() -> None:
    assert split_question("Lovely! Did you see any wildlife there?") == ("Did you see any wildlife there?", "Lovely!")
    assert split_question('Try "The Little Prince". Really?') == ("Really?", 'Try "The Little Prince".')
    assert split_question("No question here.") == ("", "No question here.")


def test_questions_point_at_the_answering_turn(tmp_path: Path) -> None:
    path = _write(tmp_path)
    assert is_memorybank(path) and not is_dialogue(path)
    records = load_memorybank(path, None)
    by_question = {r["question"]: r for r in records}
    # Ben's last turn asks but nobody answers it in that session: no question.
    assert set(by_question) == {"Can you recommend a novel?", "What else?", "Did you see any wildlife there?",
                                "Do you like jazz?"}
    wildlife = by_question["Did you see any wildlife there?"]
    assert wildlife["question_type"] == "asked-by-companion"
    assert wildlife["haystack_session_ids"] == ["Ana:2023-05-01", "Ana:2023-05-02"]  # sessions in date order
    sid, position = wildlife["evidence_turns"][0]
    answer = wildlife["haystack_sessions"][wildlife["haystack_session_ids"].index(sid)][position]
    assert answer == {"role": "user", "content": "Ana: Yes, a family of deer near the lake."}
    assert wildlife["answer_session_ids"] == ["Ana:2023-05-02"]
    novel = by_question["Can you recommend a novel?"]
    assert novel["question_type"] == "asked-by-user"


def test_asking_words_never_stay_in_the_haystack(tmp_path: Path) -> None:
    records = load_memorybank(_write(tmp_path), None)
    stored = [t["content"] for r in records for s in r["haystack_sessions"] for t in s]
    for record in records:
        assert all(record["question"] not in text for text in stored), record["question"]
    # "What else?" is the whole turn: nothing of it is stored, and the turn after it keeps its position right.
    ana = next(r for r in records if r["question"] == "What else?")
    first_day = ana["haystack_sessions"][0]
    assert [t["content"] for t in first_day] == ["Ana: Hi.", 'AI companion: Try "The Little Prince", it is short.',
                                                 "AI companion: Pride and Prejudice."]
    assert ana["evidence_turns"] == [["Ana:2023-05-01", 2]]


def test_limit_keeps_the_first_questions_in_file_order(tmp_path: Path) -> None:
    records = load_memorybank(_write(tmp_path), 2)
    assert [r["question_id"] for r in records] == ["Ana:q0", "Ana:q1"]
