"""Plain baselines over the same turns the engine searches, computed in the bench process.

`bm25`: Okapi BM25 (k1 1.2, b 0.75, Lucene's IDF) over lower-cased word tokens, no stemming, no stop
words, no index. `cosine`: exact cosine similarity between the query vector and every stored turn vector
(the same vectors the engine's index holds), no index and no re-ranking. Sessions rank by their best turn.
They answer "what would the simplest search over these texts and vectors find", so every table of
`brain bench retrieval` can show how far the engine's lists are above or below it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """An in-memory BM25 index over `docs` (key, text)."""

    def __init__(self, docs: list[tuple[Any, str]]) -> None:
        self.keys = [key for key, _ in docs]
        self.tf = [Counter(tokens(text)) for _, text in docs]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        df: Counter[str] = Counter()
        for tf in self.tf:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {term: math.log(1 + (n - count + 0.5) / (count + 0.5)) for term, count in df.items()}

    def ranked(self, query: str, k: int) -> list[Any]:
        terms = [t for t in set(tokens(query)) if t in self.idf]
        scores = []
        for index, tf in enumerate(self.tf):
            norm = K1 * (1 - B + B * self.lengths[index] / self.average)
            score = sum(self.idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            if score > 0:
                scores.append((-score, index))
        scores.sort()
        return [self.keys[index] for _, index in scores[:k]]


class Cosine:
    """Exact cosine top-k over stored vectors (key, vector)."""

    def __init__(self, rows: list[tuple[Any, Any]]) -> None:
        self.keys = [key for key, _ in rows]
        matrix = np.array([np.asarray(vector, dtype=np.float32) for _, vector in rows], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True) if len(rows) else np.ones((0, 1))
        self.matrix = matrix / np.maximum(norms, 1e-12) if len(rows) else matrix

    def ranked(self, vector: list[float], k: int) -> list[Any]:
        if not self.keys:
            return []
        query = np.asarray(vector, dtype=np.float32)
        similarity = self.matrix @ (query / max(float(np.linalg.norm(query)), 1e-12))
        top = np.argsort(-similarity, kind="stable")[:k]
        return [self.keys[i] for i in top]


def sessions_by_best_turn(turns: list[tuple[str, int]]) -> list[str]:
    """Session ids in the order their first (best) turn appears."""
    seen: dict[str, None] = {}
    for sid, _ in turns:
        seen.setdefault(sid, None)
    return list(seen)
