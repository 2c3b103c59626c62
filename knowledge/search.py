"""The hybrid search core shared by knowledge and session-event search.

One SQL statement ranks a scoped candidate set twice, by pgvector cosine distance (HNSW) and by
full-text rank (GIN, `websearch_to_tsquery` turned into an any-term query), and fuses the two ranked lists
by weighted reciprocal rank (RRF). Scope and eligibility are part of both WHERE clauses, so nothing
the caller may not see is ever ranked. Re-scoring happens afterwards in `knowledge.scoring`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from django.db import connection, transaction

from brain.logs import log_op
from knowledge.embeddings import EmbeddingUnavailable, embed_query
from knowledge.models import TS_CONFIG
from knowledge.term_stats import generating_terms, term_stats

logger = logging.getLogger(__name__)

Mode = Literal["hybrid", "fts", "vector"]
MODES: tuple[Mode, ...] = ("hybrid", "fts", "vector")
# Full-text candidates come from the query's rarer terms, within this many estimated postings (rows the GIN
# index must list) in the caller's scope, plus the rows matching the whole query; at most FTS_SCAN_CAP of each.
FTS_POSTINGS_BUDGET = 20000
FTS_SCAN_CAP = 500
# BM25's length normalisation: 0 ignores length, 1 divides by relative length. 0.75 is BM25's customary
# value; on LongMemEval dev120 it raised full-text turn recall@10 from 0.778 to 0.812 (docs/benchmarks.md).
BM25_B = 0.75
# The same normalisation on cosine similarity (`Fusion.vector_length_b`). A long text's mean-pooled vector
# drifts toward the conversation's general topic, so it sits fairly close to every question about that
# topic and crowds out the short text that states the fact. On LongMemEval dev120 every value from 0.1 to
# 0.5 raised hybrid turn recall@10 from 0.891 to 0.902-0.910 (docs/benchmarks.md); 0.2 is the smallest value
# that reaches the top of that plateau, and it gives vector search alone its best figures too.
VECTOR_LENGTH_B = 0.2
# The longest search query any interface accepts (characters).
QUERY_MAX = 2000
# Cosine distance between unit vectors lies in [0, 2]: a `max_distance` of 2 keeps every nearest row.
MAX_COSINE_DISTANCE = 2.0


@dataclass(frozen=True)
class Scope:
    """A SQL condition over the alias `t` with its named parameters (built by the selectors), and the
    projects it admits (`unassigned`: project-less rows too), which size the full-text candidate budget."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    project_ids: tuple[Any, ...] = ()
    unassigned: bool = False

    def narrowed(self, condition: str, **params: Any) -> Scope:
        """This scope with one more SQL condition (AND) and its parameters."""
        return replace(self, sql=f"{self.sql} AND {condition}", params={**self.params, **params})


@dataclass(frozen=True)
class Fusion:
    """How the two lists are built and fused. These are the product's defaults; `BRAIN_RETRIEVAL` in settings
    holds only what the environment overrides (`knowledge.selectors.search.fusion_from_settings`)."""

    # A small k trusts the top of each list: on LongMemEval dev120, k = 5 / 10 / 20 / 60 gave hybrid turn
    # recall@5 0.765 / 0.736 / 0.703 / 0.700; the textbook 60 was the worst at every granularity (docs/retrieval.md).
    rrf_k: int = 5
    # More weight on vectors raised session recall and lowered turn recall on LongMemEval dev120 (docs/benchmarks.md).
    weight_vector: float = 1.0
    weight_fts: float = 1.0
    candidates: int = 50  # rows per list; also the HNSW ef_search (at least 40)
    # Nearest neighbours exist for any query; beyond this cosine distance they are not evidence (a value set with
    # the engine, not measured by a benchmark yet). Session search passes MAX_COSINE_DISTANCE: no cut.
    max_distance: float = 0.75
    fts_postings: int = FTS_POSTINGS_BUDGET
    vector_length_b: float = VECTOR_LENGTH_B


@dataclass
class Candidate:
    id: Any
    rrf: float
    vec_rank: int | None
    vec_distance: float | None
    fts_rank: int | None
    fts_score: float | None
    row: dict[str, Any]


@dataclass
class CandidateSet:
    candidates: list[Candidate]
    retrieval: str  # "hybrid", "fts", "vector" (what ran) or "fts_only" (vectors unavailable)
    rrf_max: float
    notice: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)


_EMPTY_VEC = "SELECT NULL::uuid AS id, NULL::bigint AS rnk, NULL::float8 AS dist WHERE false"
_EMPTY_FTS = "SELECT NULL::uuid AS id, NULL::bigint AS rnk, NULL::float8 AS score WHERE false"


def _length_pivot(b: str, length: str, average: str) -> str:
    """BM25's length normalisation `(1 - b) + b * length / average`, shared by both lists' scores."""
    return f"(1 - {b} + {b} * {length} / {average})"


def _vec_cte(table: str, scope: Scope) -> str:
    """The nearest rows by cosine distance (HNSW), ranked by their similarity normalised for length the way
    BM25 normalises term frequency: divided by 1 - b + b * length / average length, where length counts
    distinct lexemes (as the full-text side does) and the average is over these nearest rows."""
    return f"""
        SELECT id, row_number() OVER (ORDER BY (1 - dist) / {_length_pivot("%(lenb)s", "len", "avg_len")} DESC, id)
               AS rnk, dist
        FROM (SELECT id, dist, len, avg(len) OVER () AS avg_len FROM (
            SELECT t.id, t.embedding <=> %(qvec)s::vector AS dist, greatest(length(t.search_vector), 1) AS len
            FROM {table} t
            WHERE {scope.sql} AND t.embedding IS NOT NULL AND t.embedding_model = %(qmodel)s
            ORDER BY t.embedding <=> %(qvec)s::vector LIMIT %(n)s) nearest
        WHERE dist <= %(maxdist)s) v"""  # noqa: S608 - names and fixed SQL only; values are parameters


def _fts_ctes(table: str, scope: Scope) -> str:
    """Full-text candidates scored BM25-style: for each query term, ts_rank (a term frequency that already
    saturates) divided by BM25's length normalisation (b = BM25_B; lengths are distinct lexemes, relative to
    the candidates' average), times an inverse document frequency measured among the candidates.
    Without the IDF, words that occur everywhere outrank the rare words that identify the answer; without
    the length normalisation, long texts that mention everything outrank the short one that answers.

    Candidates are the rows holding any of the generating terms (the rarer query terms, see
    `knowledge.term_stats`) plus the rows matching the whole query (which `websearch_to_tsquery` may widen
    with "or"), at most FTS_SCAN_CAP of each, so the best full-text hits survive even when common words
    match much of the table; every query term scores."""
    # Both tsqueries reach the planner as constants, so it can weigh the GIN index against the scope's
    # own indexes (a small project is cheaper to scan than a common term's posting list).
    tsq_all = f"websearch_to_tsquery('{TS_CONFIG}', %(qtext)s)"
    return f"""
    fts_pool AS (
        SELECT DISTINCT ON (m.id) m.id, m.sv, length(m.sv) AS len FROM (
            (SELECT t.id, t.search_vector AS sv FROM {table} t
             WHERE {scope.sql} AND t.search_vector @@ %(tsq_gen)s::tsquery LIMIT {FTS_SCAN_CAP})
            UNION ALL
            (SELECT t.id, t.search_vector AS sv FROM {table} t
             WHERE {scope.sql} AND t.search_vector @@ {tsq_all} LIMIT {FTS_SCAN_CAP})
        ) m ORDER BY m.id),
    fts_hits AS (
        SELECT p.id, x.lex, count(*) OVER (PARTITION BY x.lex) AS df,
               ts_rank(p.sv, x.tq, 0) / {_length_pivot(str(BM25_B), "p.len", "(SELECT avg(len) FROM fts_pool)")} AS tf
        FROM fts_pool p
        JOIN (SELECT DISTINCT lex, quote_literal(lex)::tsquery AS tq FROM unnest(%(lexemes)s::text[]) AS lex) x
          ON p.sv @@ x.tq),
    fts AS (
        SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rnk, score FROM (
            SELECT h.id, sum(h.tf * ln(1.0 + (SELECT count(*) FROM fts_pool)::float8 / h.df)) AS score
            FROM fts_hits h GROUP BY h.id) scored
        ORDER BY score DESC, id LIMIT %(n)s)"""  # noqa: S608


def _sql(table: str, columns: str, scope: Scope, *, use_vec: bool, use_fts: bool) -> str:
    return f"""
    WITH vec AS ({_vec_cte(table, scope) if use_vec else _EMPTY_VEC}),
    {_fts_ctes(table, scope) if use_fts else f"fts AS ({_EMPTY_FTS})"},
    fused AS (
        SELECT COALESCE(vec.id, fts.id) AS fused_id, vec.rnk AS vec_rank, vec.dist AS vec_distance,
               fts.rnk AS fts_rank, fts.score AS fts_score,
               COALESCE(%(wv)s / (%(k)s + vec.rnk), 0) + COALESCE(%(wf)s / (%(k)s + fts.rnk), 0) AS rrf
        FROM vec FULL OUTER JOIN fts ON vec.id = fts.id)
    SELECT fused.*, {columns} FROM fused JOIN {table} t ON t.id = fused.fused_id
    ORDER BY rrf DESC, t.id LIMIT %(n)s"""  # noqa: S608


def _query_vector(text: str, mode: Mode) -> tuple[list[float] | None, str, str]:
    """The query vector and model, or None with the reason when vectors cannot be used."""
    if mode == "fts":
        return None, "", ""
    try:
        vector, model = embed_query(text)
    except EmbeddingUnavailable as exc:
        log_op(logger, "retrieval.fts_only", level=logging.WARNING, reason=str(exc)[:200])
        return None, "", str(exc)
    return vector, model, ""


def hybrid_candidates(
    *, table: str, columns: str, scope: Scope, query: str, mode: Mode, fusion: Fusion
) -> CandidateSet:
    """Top `fusion.candidates` rows of `table` inside `scope`, fused by RRF; falls back to FTS alone."""
    started = time.perf_counter()
    vector, model, notice = _query_vector(query, mode)
    embedded = time.perf_counter()
    use_vec = vector is not None
    use_fts = mode != "vector" or not use_vec
    retrieval = mode if (use_vec or mode == "fts") else "fts_only"
    weight_v = fusion.weight_vector if use_vec else 0.0
    weight_f = fusion.weight_fts if use_fts else 0.0
    params = {
        **scope.params, "qtext": query, "qvec": _vector_literal(vector), "qmodel": model,
        "n": fusion.candidates, "maxdist": fusion.max_distance, "k": float(fusion.rrf_k),
        "wv": weight_v, "wf": weight_f, "lenb": fusion.vector_length_b,
    }
    sql = _sql(table, columns, scope, use_vec=use_vec, use_fts=use_fts)
    with transaction.atomic(), connection.cursor() as cursor:
        if use_fts:
            params.update(_fts_terms(cursor, table, query, scope, fusion.fts_postings))
        if use_vec:
            # Filtered HNSW scans keep going until enough rows pass the scope (pgvector >= 0.8). Both settings
            # are transaction-local (like SET LOCAL) and sent in one round trip.
            cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                           "set_config('hnsw.ef_search', %s, true)", [str(max(40, int(fusion.candidates)))])
        cursor.execute(sql, params)
        names = [col.name for col in cursor.description or []]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    rrf_max = (weight_v + weight_f) / (fusion.rrf_k + 1)
    timings = {"embed": round((embedded - started) * 1000, 3), "sql": round((time.perf_counter() - embedded) * 1000, 3)}
    return CandidateSet([_candidate(row) for row in rows], retrieval, rrf_max, notice, timings)


def _fts_terms(cursor: Any, table: str, query: str, scope: Scope, budget: int) -> dict[str, Any]:
    """The query's lexemes (all of them score) and the rarer ones that generate candidates."""
    cursor.execute(f"SELECT tsvector_to_array(to_tsvector('{TS_CONFIG}', %s))", [query])
    lexemes = list(cursor.fetchone()[0])
    stats = term_stats(table)
    scope_rows = stats.scope_rows(scope.project_ids, unassigned=scope.unassigned)
    generating = generating_terms(lexemes, stats, budget, scope_rows)
    return {"lexemes": lexemes, "tsq_gen": " | ".join(map(_tsquery_lexeme, generating)) or None}


def _tsquery_lexeme(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (tsquery input escapes with backslash and doubled quotes)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _vector_literal(vector: list[float] | None) -> str | None:
    if vector is None:
        return None
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _candidate(row: dict[str, Any]) -> Candidate:
    return Candidate(
        id=row.pop("fused_id"), rrf=float(row.pop("rrf")), vec_rank=row.pop("vec_rank"),
        vec_distance=row.pop("vec_distance"), fts_rank=row.pop("fts_rank"), fts_score=row.pop("fts_score"), row=row,
    )
