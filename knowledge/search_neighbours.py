"""Full-text scores that count a row's neighbours: a session's turns read in context.

A short chat turn often answers what the turn before it asked ("Where were you?" / "At the coffee house") or is
named by the one after it, so the words a question shares with a turn are often in its neighbours. Each pool row
is scored by BM25 over its own lexemes plus `share` of each neighbour's (the rows just before and after it in its
sequence), and over its own length plus `share` of theirs. Only neighbours inside the full-text pool lend words
or length: a neighbour holding any query lexeme is in the pool whenever the pool is not capped, so the counts are
exact, and a neighbour outside it has no query word to lend (its length, left out, mattered little: on FriendsQA
dev turn recall@10 0.564 against 0.575 with it; docs/benchmarks.md, issue 16, eleventh step). Rows are joined
on (group, position ± 1) equality, a hash join over the pool, never an index probe per row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RowOrder:
    """The columns that order a table's rows into sequences: the row's group (its session) and its place."""

    group: str
    position: str

    def pool_columns(self) -> str:
        return f", t.{self.group} AS grp, t.{self.position} AS pos"


def neighbour_ctes(own_lexemes: str) -> str:
    """CTEs over `fts_pool` (id, sv, len, grp, pos) ending in `fts_rows` (id, len, lex: the row's length with
    its neighbours' shares, its own distinct lexemes) and `fts_terms` (id, lexeme, tf, len, lex), the shapes
    the BM25 statement reads; `own_lexemes` is the set-returning call giving a pool row `p`'s query lexemes."""
    return f"""
    fts_own AS (
        SELECT p.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
        FROM fts_pool p CROSS JOIN LATERAL {own_lexemes} u),
    fts_near AS (
        SELECT id, id AS nid, 1.0::float8 AS w FROM fts_pool
        UNION ALL
        SELECT p.id, n.id, %(nbshare)s::float8 FROM fts_pool p CROSS JOIN (VALUES (-1), (1)) o(d)
        JOIN fts_pool n ON n.grp = p.grp AND n.pos = p.pos + o.d),
    fts_rows AS (
        SELECT f.id, sum(f.w * p.len) AS len, max(length(p.sv)) FILTER (WHERE f.nid = f.id) AS lex
        FROM fts_near f JOIN fts_pool p ON p.id = f.nid GROUP BY f.id),
    fts_terms AS (
        SELECT s.id, s.lexeme, s.tf, r.len, r.lex FROM (
            SELECT f.id, w.lexeme, sum(f.w * w.tf) AS tf
            FROM fts_near f JOIN fts_own w ON w.id = f.nid GROUP BY f.id, w.lexeme) s
        JOIN fts_rows r ON r.id = s.id),"""  # noqa: S608 - fixed SQL only; the share is a parameter
