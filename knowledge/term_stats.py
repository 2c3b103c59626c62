"""How common each full-text lexeme is in a table, from the statistics ANALYZE keeps.

A GIN index answers "rows containing lexeme X" by reading X's whole posting list, and a query of common
words (use, code, file) touches a large share of the table before any LIMIT applies. The full-text side of
the search therefore generates candidates only from its rarer terms, within a budget of estimated postings;
common terms still score every candidate (see `knowledge.search`).

The estimate comes from `pg_stats.most_common_elems` of the tsvector column, which autovacuum's ANALYZE
refreshes as the table changes: the ~1,000 most frequent lexemes with the share of rows holding each.
A lexeme not listed is rarer than the least frequent listed one. What a query would touch is the lexeme's
share times the rows of the caller's scope, estimated the same way from the `project_id` column's
statistics: a project of 500 events in a table of a million never has its terms pruned, a project holding
most of the table does. The figures are read once per process and table, then again after `REFRESH_S`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

REFRESH_S = 300.0


@dataclass(frozen=True)
class TermStats:
    rows: float = 0.0  # the planner's row count for the table
    share: dict[str, float] = field(default_factory=dict)  # lexeme -> share of rows containing it
    unlisted_share: float = 0.0  # upper bound for any lexeme not in `share`
    project_share: dict[str, float] = field(default_factory=dict)  # project id -> share of rows
    other_project_share: float | None = None  # a project not listed: the average of the rest (None: unknown)
    null_project_share: float = 0.0  # rows without a project

    def scope_rows(self, project_ids: Iterable[object], *, unassigned: bool) -> float:
        """Estimated rows of the given projects (plus the project-less rows when `unassigned`)."""
        if self.other_project_share is None:
            return self.rows  # no statistics on the project column: assume the whole table
        share = sum(self.project_share.get(str(p), self.other_project_share) for p in project_ids)
        return min(1.0, share + (self.null_project_share if unassigned else 0.0)) * self.rows

    def listed(self, project_ids: Iterable[object]) -> bool:
        """Whether every one of these projects has its own share in the statistics (not the average of the rest)."""
        ids = [str(p) for p in project_ids]
        return bool(ids) and all(p in self.project_share for p in ids)

    def lexeme_share(self, lexeme: str) -> float:
        return self.share.get(lexeme, self.unlisted_share)


_cache: dict[str, tuple[float, TermStats]] = {}
_lock = threading.Lock()


def term_stats(table: str) -> TermStats:
    now = time.monotonic()
    with _lock:
        cached = _cache.get(table)
        if cached is not None and now - cached[0] < REFRESH_S:
            return cached[1]
    stats = _read(table)
    with _lock:
        _cache[table] = (now, stats)
    return stats


def forget() -> None:
    """Drop cached figures (tests and benchmarks call this after loading or ANALYZE)."""
    with _lock:
        _cache.clear()


def _read(table: str) -> TermStats:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.reltuples, s.attname, s.most_common_elems::text::text[], s.most_common_elem_freqs, "
            "s.most_common_vals::text::text[], s.most_common_freqs, s.n_distinct, s.null_frac "
            "FROM pg_class c LEFT JOIN pg_stats s ON s.tablename = c.relname AND s.schemaname = current_schema() "
            "AND s.attname IN ('search_vector', 'project_id') WHERE c.oid = to_regclass(%s)",
            [table],
        )
        found = cursor.fetchall()
    if not found:
        return TermStats()
    rows = max(float(found[0][0]), 0.0)
    stats: dict[str, Any] = {"rows": rows}
    for _, column, elems, elem_freqs, vals, freqs, n_distinct, null_frac in found:
        if column == "search_vector" and elems and elem_freqs:
            # One frequency per lexeme, then their minimum and maximum (and a null share).
            stats["share"] = dict(zip(elems, elem_freqs[: len(elems)], strict=True))
            stats["unlisted_share"] = float(elem_freqs[len(elems)])
        elif column == "project_id":
            stats.update(_project_shares(rows, list(vals or []), list(freqs or []), n_distinct, null_frac))
    return TermStats(**stats)


def _project_shares(rows: float, values: list[str], freqs: list[float], n_distinct: float,
                    null_frac: float) -> dict[str, Any]:
    """Shares of rows per project: listed for the most common projects, the average of the rest otherwise."""
    distinct = n_distinct if n_distinct >= 0 else -n_distinct * rows  # negative: a share of the row count
    rest = max(0.0, 1.0 - sum(freqs) - null_frac)
    return {"project_share": dict(zip(values, freqs, strict=True)), "null_project_share": float(null_frac),
            "other_project_share": rest / max(1.0, distinct - len(values))}


def generating_terms(lexemes: list[str], stats: TermStats, budget: float, scope_rows: float) -> list[str]:
    """The rarest lexemes whose estimated postings in a scope of `scope_rows` rows fit in `budget`
    together (at least the rarest one). Without lexeme statistics every term generates."""
    ordered = sorted(set(lexemes), key=lambda lex: (stats.lexeme_share(lex), lex))
    chosen: list[str] = []
    spent = 0.0
    for lexeme in ordered:
        cost = stats.lexeme_share(lexeme) * scope_rows
        if chosen and spent + cost > budget:
            break
        chosen.append(lexeme)
        spent += cost
    return chosen
