"""LongMemEval records: loading, grouping questions that share a haystack, and recall metrics."""

from __future__ import annotations

import gzip
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEYS = ("turn_recall@5", "turn_recall@10", "session_recall@5", "session_recall@10")


@dataclass
class Group:
    """Questions whose haystacks are identical: ingested once into one project."""

    haystack_ids: list[str]
    dates: list[str]
    sessions: list[list[dict[str, Any]]]
    questions: list[dict[str, Any]] = field(default_factory=list)


def json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object a `.json` file holds, or None for a directory, another suffix or a file that does not
    start with "{" (read no further): how the bench tells one dataset's file from another's."""
    if path.is_dir() or path.suffix != ".json":
        return None
    with path.open(encoding="utf-8") as fh:
        if fh.read(1) != "{":
            return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else None


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    records = json.loads(text) if text.lstrip().startswith("[") else [json.loads(line) for line in text.splitlines()
                                                                      if line.strip()]
    return records[:limit] if limit else records


def groups_of(records: list[dict[str, Any]]) -> list[Group]:
    groups: dict[tuple[str, ...], Group] = {}
    for rec in records:
        key = tuple(rec["haystack_session_ids"])
        if key not in groups:
            groups[key] = Group(list(key), list(rec.get("haystack_dates") or []), rec["haystack_sessions"])
        groups[key].questions.append(rec)
    return list(groups.values())


def share_found(wanted: set[Any], ranked: list[Any], k: int) -> float:
    return len(wanted & set(ranked[:k])) / len(wanted)


class Tally:
    """Per-mode recall lists, overall and by question type, and query latencies."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, list[float]]] = {}
        self.latencies_ms: list[float] = []

    def add(self, qtype: str, key: str, value: float) -> None:
        for bucket in ("overall", qtype):
            self.values.setdefault(bucket, {k: [] for k in KEYS})[key].append(value)

    def summary(self) -> dict[str, Any]:
        def means(bucket: dict[str, list[float]]) -> dict[str, float | None]:
            return {k: (round(statistics.fmean(v), 4) if v else None) for k, v in bucket.items()}

        lat = sorted(self.latencies_ms)
        return {
            "overall": means(self.values.get("overall", {k: [] for k in KEYS})),
            "by_type": {t: means(b) for t, b in sorted(self.values.items()) if t != "overall"},
            "query_ms": {"p50": percentile(lat, 50), "p95": percentile(lat, 95)},
            "turn_questions": len(self.values.get("overall", {}).get("turn_recall@5", [])),
        }


def percentile(sorted_values: list[float], pct: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, round(pct / 100 * len(sorted_values) + 0.5) - 1))
    return round(sorted_values[index], 2)
