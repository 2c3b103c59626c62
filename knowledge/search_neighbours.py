"""Full-text scores that count a row's neighbours: a session's turns read in context.

A short chat turn often answers what the turn before it asked ("Where were you?" / "At the coffee house") or is
named by the one after it, so the words a question shares with a turn are often in its neighbours. Each pool row
is scored by BM25 over its own lexemes plus `share` of each neighbour's (the rows just before and after it in its
sequence), and over its own length plus `share` of theirs. Only neighbours inside the full-text pool lend words
or length: a neighbour holding any query lexeme is in the pool whenever the pool is not capped, so the counts are
exact, and a neighbour outside it has no query word to lend (its length, left out, mattered little: on FriendsQA
dev turn recall@10 0.564 against 0.575 with it; docs/benchmarks.md, issue 16, eleventh step). Rows are joined
on (group, position ± 1) equality, a hash join over the pool, never an index probe per row.

The fusion does the same with its fused scores (`fused_neighbour_ctes`): a row found by either list adds `share`
of the fused score of each neighbour the lists also found, and a smaller share of each found row two places away.
A turn next to found turns is part of the passage they found, and the vector list's hits, often the turn beside
the evidence, lend their weight to it; an exchange often runs over three or four turns, so the rows two away still
say something (FriendsQA test hybrid turn recall@10 0.589 -> 0.609 at a fifth; docs/benchmarks.md, issue 16,
fourteenth step). The full-text side stays at one place each way: BM25 over the turns two away too lifted the
full-text list but not the fusion (twelfth step).

Both count neighbours only between short rows (`Fusion.neighbour_lexemes` distinct lexemes or fewer, each side): a
long assistant reply beside a user's one-line statement is a survey of the same topic, and letting the two lend
each other weight pushed the statements out of the top 10 (ungated, LongMemEval dev120 hybrid turn recall@10 fell
from 0.914 to 0.834).
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
    """CTEs over `fts_pool` (id, sv, len, lex, grp, pos) ending in `fts_rows` (id, len, lex: the row's length with
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
        JOIN fts_pool n ON n.grp = p.grp AND n.pos = p.pos + o.d
        WHERE p.lex <= %(nblex)s AND n.lex <= %(nblex)s),
    fts_rows AS (
        SELECT f.id, sum(f.w * p.len) AS len, max(p.lex) FILTER (WHERE f.nid = f.id) AS lex
        FROM fts_near f JOIN fts_pool p ON p.id = f.nid GROUP BY f.id),
    fts_terms AS (
        SELECT s.id, s.lexeme, s.tf, r.len, r.lex FROM (
            SELECT f.id, w.lexeme, sum(f.w * w.tf) AS tf
            FROM fts_near f JOIN fts_own w ON w.id = f.nid GROUP BY f.id, w.lexeme) s
        JOIN fts_rows r ON r.id = s.id),"""  # noqa: S608 - fixed SQL only; the share is a parameter


def neighbour_gain(near: float, far: float) -> float:
    """The most `fused_neighbour_ctes` can multiply a fused score by: two neighbours at each distance, each found
    with at most the row's own score (what `rrf_max` is scaled by)."""
    return 1 + 2 * near + 2 * far


def fused_neighbour_ctes(table: str, order: RowOrder) -> str:
    """CTEs over `fused` (fused_id, vec_rank, vec_distance, fts_rank, fts_score, rrf) ending in `fused_near`, the
    same columns with `rrf` plus %(nbfused)s of each found neighbour's (the rows just before and after it) and
    %(nbfar)s of each found row two places away; `table` and `order` name the sequences."""
    return f"""
    fused_placed AS (
        SELECT f.*, t.{order.group} AS grp, t.{order.position} AS pos, length(t.search_vector) AS lex
        FROM fused f JOIN {table} t ON t.id = f.fused_id),
    fused_near AS (
        SELECT p.fused_id, p.vec_rank, p.vec_distance, p.fts_rank, p.fts_score,
               p.rrf + coalesce(sum(CASE WHEN abs(n.pos - p.pos) = 1 THEN %(nbfused)s::float8
                                  ELSE %(nbfar)s::float8 END * n.rrf), 0) AS rrf
        FROM fused_placed p LEFT JOIN fused_placed n
             ON n.grp = p.grp AND n.pos IN (p.pos - 2, p.pos - 1, p.pos + 1, p.pos + 2)
             AND p.lex <= %(nblex)s AND n.lex <= %(nblex)s
        GROUP BY p.fused_id, p.vec_rank, p.vec_distance, p.fts_rank, p.fts_score, p.rrf)"""  # noqa: S608
