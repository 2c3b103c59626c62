"""How common each full-text lexeme is in a table, from the statistics ANALYZE keeps.

A GIN index answers "rows containing lexeme X" by reading X's whole posting list, and a query of common
words (use, code, file) touches a large share of the table before any LIMIT applies. The full-text side of
the search therefore generates candidates only from its rarer terms, within a budget of estimated postings;
common terms still score every candidate (see `knowledge.search`).

The estimate comes from `pg_stats.most_common_elems` of the tsvector column, which autovacuum's ANALYZE
refreshes as the table changes: the ~1,000 most frequent lexemes with the share of rows holding each.
A lexeme not listed is rarer than the least frequent listed one. The figures are read once per process
and table, then again after `REFRESH_S`, so a query pays one dictionary lookup per term.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from django.db import connection

REFRESH_S = 300.0


@dataclass(frozen=True)
class TermStats:
    rows: float = 0.0  # the planner's row count for the table
    share: dict[str, float] = field(default_factory=dict)  # lexeme -> share of rows containing it
    unlisted_share: float = 0.0  # upper bound for any lexeme not in `share`

    def postings(self, lexeme: str) -> float:
        """Estimated number of rows holding `lexeme` (0 when the table was never analysed)."""
        return self.share.get(lexeme, self.unlisted_share) * self.rows


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
            "SELECT c.reltuples, s.most_common_elems::text::text[], s.most_common_elem_freqs "
            "FROM pg_class c LEFT JOIN pg_stats s ON s.tablename = c.relname AND s.attname = 'search_vector' "
            "AND s.schemaname = current_schema() WHERE c.oid = to_regclass(%s)",
            [table],
        )
        row = cursor.fetchone()
    if row is None or not row[1] or not row[2]:
        return TermStats(rows=max(float(row[0]), 0.0) if row else 0.0)
    rows, lexemes, freqs = float(row[0]), list(row[1]), [float(f) for f in row[2]]
    # The frequencies are one per lexeme followed by their minimum and maximum (and a null share).
    return TermStats(rows=max(rows, 0.0), share=dict(zip(lexemes, freqs[: len(lexemes)], strict=True)),
                     unlisted_share=freqs[len(lexemes)])


def generating_terms(lexemes: list[str], stats: TermStats, budget: float) -> list[str]:
    """The rarest lexemes whose estimated postings fit in `budget` together (at least the rarest one)."""
    ordered = sorted(set(lexemes), key=lambda lex: (stats.postings(lex), lex))
    chosen: list[str] = []
    spent = 0.0
    for lexeme in ordered:
        cost = stats.postings(lexeme)
        if chosen and spent + cost > budget:
            break
        chosen.append(lexeme)
        spent += cost
    return chosen
