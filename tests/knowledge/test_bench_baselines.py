"""The plain baselines of `brain bench retrieval` against hand-computed rankings."""

from __future__ import annotations

import math

from brain.bench.baselines import BM25, Cosine, sessions_by_best_turn


def test_bm25_ranks_the_rare_term_first_and_normalises_length() -> None:
    docs = [("a", "the cat sat on the mat"), ("b", "the dog"), ("c", "zebra the the the the the the")]
    index = BM25(docs)
    assert index.ranked("zebra", 5) == ["c"]
    assert index.ranked("the dog", 5)[0] == "b"  # rare "dog" outweighs the common "the"
    assert math.isclose(index.idf["zebra"], math.log(1 + (3 - 1 + 0.5) / 1.5))
    assert index.ranked("nothing matches", 5) == []


def test_cosine_is_exact_and_ignores_vector_length() -> None:
    index = Cosine([("x", [1.0, 0.0]), ("y", [10.0, 10.0]), ("z", [0.0, -1.0])])
    assert index.ranked([1.0, 0.9], 3) == ["y", "x", "z"]
    assert Cosine([]).ranked([1.0], 3) == []


def test_sessions_rank_by_their_best_turn() -> None:
    assert sessions_by_best_turn([("s2", 4), ("s1", 0), ("s2", 1)]) == ["s2", "s1"]
