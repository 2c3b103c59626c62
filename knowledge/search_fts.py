"""The full-text list of a hybrid search (`knowledge.search`): candidates from the GIN index scored by Okapi BM25 in
one statement, returned as PostgreSQL array texts that the fusion statement takes back as they are."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError

from brain.logs import log_op
from brain.sql_rows import execute_generic, failure_contained
from knowledge.models import TS_CONFIG
from knowledge.search_neighbours import RowOrder, neighbour_ctes
from knowledge.search_scope import PoolRead, Scoped, fts_terms, pool_read, scope_matching
from knowledge.search_standard import long_row_penalty

if TYPE_CHECKING:
    from knowledge.search import Fusion, Scope

logger = logging.getLogger(__name__)

# BM25's term-frequency saturation (the customary 1.2).
BM25_K1 = 1.2
# BM25's length normalisation: 0 ignores length, 1 divides by relative length. 0.75 is BM25's customary
# value; on LongMemEval dev120 it raised full-text turn recall@10 from 0.778 to 0.812 (docs/benchmarks.md).
BM25_B = 0.75


def _length_pivot(b: str, length: str, average: str) -> str:
    """BM25's length normalisation `(1 - b) + b * length / average`."""
    return f"(1 - {b} + {b} * {length} / {average})"


def _fts_ctes(table: str, scope: Scope, order: RowOrder | None = None, *, standard: bool = False,
              read: PoolRead = "planner") -> str:
    """Full-text candidates scored by Okapi BM25: for each query term, its count in the row (from the
    tsvector's positions) saturated by BM25_K1 and normalised by the row's length in tokens relative to
    the candidates' average (b = BM25_B), times the term's inverse document frequency in the caller's scope
    (`scope_n` rows; the term's rows among the candidates, or the statistics' estimate when the candidate
    pool was capped). An IDF measured inside the pool alone inverted the weights: the pool is made of the
    rows holding the query's rarer terms, so in it those terms looked common and common words looked rare.
    The row's length is stored (`search_tokens`), and only the query's lexemes of its tsvector are unnested:
    `setweight` marks them with weight B and `ts_filter` keeps what is marked (a query lexeme the row lacks is
    skipped; a row's own B-weighted lexemes, if any, find no query term in `fts_hits`). Unnesting every
    candidate's whole tsvector cost half of the statement at 100,000 rows (docs/benchmarks.md). A term's count among
    the candidates is a grouped count joined back (a window partitioned by term sorted every term row: the
    statement took a third longer), and the arithmetic is in float8 (an integer average is a numeric).

    Candidates are the rows holding any of the generating terms (the rarer query terms, see
    `knowledge.term_stats`) plus the rows matching the whole query (which `websearch_to_tsquery` may widen
    with "or"), at most `fts_cap` of each: every matching row of a small scope (EXACT_ROWS), `Fusion.fts_scan_cap`
    otherwise, so the best full-text hits survive even when common words match much of the table. `read`: how the
    scope's matching rows are read (`knowledge.search_scope.scope_matching`).

    With `order`, each row is scored with its neighbours' words too (knowledge/search_neighbours.py). With
    `standard`, each row also carries the mean and spread of every scored row's score (`mu`, `sd`)."""
    # Both tsqueries reach the planner as constants, so it can weigh the GIN index against the scope's
    # own indexes (a small project is cheaper to scan than a common term's posting list).
    tsq_all = f"websearch_to_tsquery('{TS_CONFIG}', %(qtext)s)"

    def matching(tsquery: str) -> str:
        return scope_matching(table, scope, tsquery, read=read)

    pivot = _length_pivot(str(BM25_B), "h.len", "n.avg_len")
    long_penalty = long_row_penalty("%(ftslenb)s", "max(h.lex)", "%(ftslonglex)s")
    own_lexemes = "unnest(ts_filter(setweight(p.sv, 'B', %(lexemes)s::text[]), '{b}'))"
    # A row's distinct lexemes (`lex`) are counted once here: counted per term row, they cost a tenth of the statement.
    pooled = ("t.id, t.search_vector AS sv, t.search_tokens AS len, length(t.search_vector) AS lex"
              + (order.pool_columns() if order else ""))
    stats = ", avg(score) OVER () AS mu, stddev_pop(score) OVER () AS sd" if standard else ""
    terms = neighbour_ctes(own_lexemes) if order else f"""
    fts_terms AS (
        SELECT p.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, p.len, p.lex
        FROM fts_pool p CROSS JOIN LATERAL {own_lexemes} u),"""  # noqa: S608 - fixed SQL only
    return f"""
    fts_pool AS (
        SELECT DISTINCT ON (m.id) m.* FROM (
            (SELECT {pooled} FROM {matching("%(tsq_gen)s::tsquery")} LIMIT %(fts_cap)s)
            UNION ALL
            (SELECT {pooled} FROM {matching(tsq_all)} LIMIT %(fts_cap)s)
        ) m ORDER BY m.id),{terms}
    fts_n AS (SELECT greatest(%(scope_n)s::float8, count(*)) AS n, greatest(avg(len), 1)::float8 AS avg_len
              FROM {"fts_rows" if order else "fts_pool"}),
    fts_df AS (SELECT lexeme, count(*) AS df FROM fts_terms GROUP BY lexeme),
    fts_hits AS (
        SELECT w.id, w.tf::float8 AS tf, w.len::float8 AS len, w.lex, e.est, d.df
        FROM fts_terms w JOIN fts_df d ON d.lexeme = w.lexeme
        JOIN unnest(%(lexemes)s::text[], %(lex_df)s::float8[]) AS e(lex, est) ON e.lex = w.lexeme),
    fts AS (
        SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rnk, score{stats} FROM (
            SELECT h.id, sum(ln(1.0 + (n.n - greatest(h.df, h.est) + 0.5) / (greatest(h.df, h.est) + 0.5))
                             * h.tf * {BM25_K1 + 1} / (h.tf + {BM25_K1} * {pivot}))
                   / {long_penalty} AS score
            FROM fts_hits h CROSS JOIN fts_n n GROUP BY h.id) scored
        ORDER BY score DESC, id LIMIT %(n)s)"""  # noqa: S608


def _fts_list_sql(table: str, scope: Scope, order: RowOrder | None, *, standard: bool,
                  read: PoolRead = "planner") -> str:
    """The full-text list as two PostgreSQL array texts (ids, scores) in rank order, which the fusion statement
    takes back as they are: built and parsed in C on the server, where rows of Python values were loaded and then
    quoted again as literals (0.2 ms a search). float8's text is exact (shortest round-trip digits). With
    `standard`, also the mean and spread of all scored rows' scores (0 for none)."""
    ctes = _fts_ctes(table, scope, order, standard=standard, read=read)
    stats = ", coalesce(max(mu), 0), coalesce(max(sd), 0)" if standard else ""
    return (f"WITH {ctes} SELECT coalesce(array_agg(id ORDER BY rnk), '{{}}')::text, "  # noqa: S608
            f"coalesce(array_agg(score ORDER BY rnk), '{{}}')::text{stats} FROM fts")


@dataclass
class FtsList:
    """The full-text list: its ids and scores in rank order, as PostgreSQL array texts (see `_fts_list_sql`),
    and with standard scores the mean and spread of every scored row's score."""

    ids: str = "{}"
    scores: str = "{}"
    mu: float = 0.0
    sd: float = 0.0


def fts_list(cursor: Any, table: str, scope: Scope, query: str, scoped: Scoped, fusion: Fusion,
             order: RowOrder | None) -> FtsList:
    """The full-text list of `query` (as `knowledge.search_scope.fts_query_text` gave it) in `scope`, one statement."""
    params = {**scope.params, "qtext": query, "scope_n": scoped.rows, "n": fusion.candidates,
              "ftslonglex": max(fusion.fts_long_lexemes, 1), "nbshare": fusion.fts_neighbours,
              "nblex": fusion.neighbour_lexemes,
              "ftslenb": fusion.fts_length_b if fusion.fts_long_lexemes > 0 else 0.0, **fts_terms(scoped, fusion)}
    standard = fusion.standard_weight > 0
    read = pool_read(scoped, params["fts_cap"])
    sql = _fts_list_sql(table, scope, order if fusion.fts_neighbours > 0 else None, standard=standard, read=read)
    if read != "matches_first":  # planned with the values: the scope's and the terms' sizes choose the indexes
        cursor.execute(sql, params)
    else:
        # The pool reads the term index first and the rest of the plan follows from the SQL, so no value changes it:
        # it is made once per connection. Planning was 0.6 ms of the statement's 3.5 at 100,000 rows. A scope read
        # first is planned each time: its generic plan does not know how small the scope is and took twice as long
        # (docs/benchmarks.md, issue 17, twenty-ninth pass). The caps are written in, so the plan knows its LIMITs.
        execute_generic(cursor, "fts", sql, params, counts=("fts_cap", "n"))
    return FtsList(*cursor.fetchone())


def fts_list_or_reason(cursor: Any, table: str, scope: Scope, query: str, scoped: Scoped, fusion: Fusion,
                       order: RowOrder | None) -> tuple[FtsList, str]:
    """A hybrid search's full-text list, or an empty one and why when PostgreSQL refused it (a query its parser
    could not read, a statement timeout): the vector list then ranks alone, where the error used to fail the whole
    search and a session opened with nothing injected. Inside a transaction the statement runs in a savepoint, so
    the failure leaves the caller's transaction usable."""
    try:
        with failure_contained():
            return fts_list(cursor, table, scope, query, scoped, fusion, order), ""
    except DatabaseError as exc:
        log_op(logger, "retrieval.fts_failed", level=logging.WARNING, error=type(exc).__name__,
               reason=str(exc)[:200])
        return FtsList(), f"Full-text search failed ({str(exc).strip()[:120]}); vectors alone ranked this."
