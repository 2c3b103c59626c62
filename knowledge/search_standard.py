"""Standard scores beside the ranks (`Fusion.standard_weight`; session search turns them on).

A reciprocal rank says where a row stands in its list, not how far it stands out: the third row of a list whose
head is one row far above the rest counts as much as the third of a flat list. So each list also adds its row's
standard score, clipped at 0: cosine similarity (long rows penalised) against every row of the scope, BM25 against
every row that matches a query term. A full-text row the vector list did not reach is still scored by its own
cosine (its vector term is that standard score alone), so a full-text hit that means something else than the
question loses to one that means it. The per-query shares then come from the lists' heads in the same units: the
mean standard score of each list's first SHAPE_HEAD rows (the full-text one scaled by its best BM25 over
SHAPE_FTS_FULL, as before). On the five sets of docs/benchmarks.md (issue 16, nineteenth step) this took the worst
margin of hybrid over its better list from -0.006 to 0 and kept hybrid turn recall@10 over BM25 + 0.10 on all of
them. A scope too large to read exactly (the HNSW walk) measures its vector spread over the rows the walk found, so
there the cosine of a full-text row adds little.

The CTEs here read `fts` (id, rnk, score, z) and define `vec`, `vec_stat`, `vec_z`, `fts_cos`, `conf`, `shares` and
`fused`, whose columns are those of the rank-only fusion (`knowledge.search._sql`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from knowledge.search import Scope


@dataclass(frozen=True)
class Standard:
    """What each list's standard scores were measured against: the mean and spread of the scope's similarities
    (`vector_mu`, `vector_sd`) and of its full-text matches' BM25 scores (`fts_mu`, `fts_sd`)."""

    vector_mu: float
    vector_sd: float
    fts_mu: float
    fts_sd: float


def vector_spread(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The scope's mean and spread of similarity, which the standard fusion returns with every row."""
    mu = sd = None
    for row in rows:
        mu, sd = row.pop("vec_mu"), row.pop("vec_sd")
    return float(mu or 0.0), float(sd or 0.0)


# The rows the vector list may rank: those embedded by the query's model.
_VECTOR_ROWS = "t.embedding IS NOT NULL AND t.embedding_model = %(qmodel)s"


def long_row_penalty(b: str, length: str, long: str) -> str:
    """The divisor of a row's score for rows longer than `long` lexemes: `1 + b * max(0, length / long - 1)`
    (knowledge/search.py, VECTOR_LONG_LEXEMES, FTS_LONG_LEXEMES)."""
    return f"(1 + {b} * greatest({length}::float8 / {long} - 1, 0))"


def _similarity(dist: str, length: str) -> str:
    """Cosine similarity with long rows penalised, as the vector list ranks it."""
    return f"(1 - {dist}) / {long_row_penalty('%(lenb)s', length, '%(longlex)s')}"


def standard_vec_ctes(table: str, scope: Scope, *, exact: bool) -> str:
    """`vec` (id, rnk, dist, sim) and `vec_stat` (mu, sd). An exact scope computes every row's similarity once
    (`vec_all`, read twice, so PostgreSQL materialises it and the ORDER BY cannot walk the index) and measures
    the spread over all of them; a walk measures it over the rows it found."""
    rows = f"""
        SELECT t.id, t.embedding <=> %(qvec)s::vector AS dist, greatest(length(t.search_vector), 1) AS len
        FROM {table} t WHERE {scope.sql} AND {_VECTOR_ROWS}"""  # noqa: S608 - names and fixed SQL only
    if exact:
        # OFFSET 0 keeps the subquery whole, so each row's distance is computed once, not once per use.
        return f"""
    vec_all AS (SELECT id, dist, {_similarity("dist", "len")} AS sim FROM ({rows} OFFSET 0) d),
    vec_stat AS (SELECT avg(sim) AS mu, stddev_pop(sim) AS sd FROM vec_all),
    vec AS (
        SELECT id, row_number() OVER (ORDER BY sim DESC, id) AS rnk, dist, sim
        FROM (SELECT id, dist, sim FROM vec_all ORDER BY dist LIMIT %(n)s) nearest
        WHERE dist <= %(maxdist)s),"""  # noqa: S608
    return f"""
    vec AS (
        SELECT id, row_number() OVER (ORDER BY sim DESC, id) AS rnk, dist, sim
        FROM (SELECT id, dist, {_similarity("dist", "len")} AS sim
              FROM ({rows} ORDER BY t.embedding <=> %(qvec)s::vector LIMIT %(n)s) d) nearest
        WHERE dist <= %(maxdist)s),
    vec_stat AS (SELECT avg(sim) AS mu, stddev_pop(sim) AS sd FROM vec),"""  # noqa: S608


def standard_fused_ctes(table: str, scope: Scope, *, head: int, fts_full: float) -> str:
    """`vec_z`, `fts_cos`, `conf`, `shares` and `fused` over `vec`, `vec_stat` and `fts`. A standard score over a
    flat list (no spread) is 0; a list's head that stands below its scope's mean gives it no share."""
    return f"""
    vec_z AS (SELECT v.id, v.rnk, v.dist, (v.sim - s.mu) / nullif(s.sd, 0) AS z FROM vec v CROSS JOIN vec_stat s),
    fts_cos AS (
        SELECT f.id, ({_similarity("d.dist", "d.len")} - s.mu) / nullif(s.sd, 0) AS z
        FROM fts f CROSS JOIN vec_stat s CROSS JOIN LATERAL (
            SELECT t.embedding <=> %(qvec)s::vector AS dist, greatest(length(t.search_vector), 1) AS len
            FROM {table} t WHERE t.id = f.id AND {scope.sql} AND {_VECTOR_ROWS} OFFSET 0) d
        WHERE NOT EXISTS (SELECT 1 FROM vec v WHERE v.id = f.id)),
    conf AS (SELECT greatest(coalesce((SELECT avg(z) FROM vec_z WHERE rnk <= {head}), 0), 0) AS cv,
                    greatest(coalesce((SELECT avg(z) FROM fts WHERE rnk <= {head}), 0), 0)
                    * (SELECT coalesce(least(max(score) / {fts_full}, 1), 0) FROM fts) AS cf),
    shares AS (SELECT CASE WHEN %(adaptive)s AND cv + cf > 0
                           THEN least(greatest(2 * cv / (cv + cf), %(floor)s), 2 - %(floor)s)
                           ELSE 1 END AS sv FROM conf),
    fused AS (
        SELECT COALESCE(v.id, f.id) AS fused_id, v.rnk AS vec_rank, v.dist AS vec_distance,
               f.rnk AS fts_rank, f.score AS fts_score,
               shares.sv * %(wv)s * (COALESCE(1 / (%(kv)s + v.rnk), 0)
                                     + %(sw)s * greatest(COALESCE(v.z, c.z, 0), 0))
               + (2 - shares.sv) * %(wf)s * (COALESCE(1 / (%(k)s + f.rnk), 0)
                                             + %(sw)s * greatest(COALESCE(f.z, 0), 0)) AS rrf
        FROM vec_z v FULL OUTER JOIN fts f ON v.id = f.id LEFT JOIN fts_cos c ON c.id = f.id CROSS JOIN shares)"""  # noqa: S608
