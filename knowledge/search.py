"""The hybrid search core shared by knowledge and session-event search.

A scoped candidate set is ranked twice, by full-text rank (GIN, `websearch_to_tsquery` turned into an any-term
query, Okapi BM25; one statement, run while the model embeds the query) and by pgvector cosine distance (HNSW), and
the two ranked lists are fused by weighted reciprocal rank (RRF) in a second statement. Scope and eligibility are
part of both WHERE clauses, so nothing the caller may not see is ever ranked. Re-scoring happens afterwards in
`knowledge.scoring`.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from django.db import connection

from brain.logs import log_op
from knowledge.embeddings import EmbeddingUnavailable, embed_query_soon
from knowledge.search_fts import FtsList, fts_list, fts_list_or_reason
from knowledge.search_neighbours import RowOrder, fused_neighbour_ctes, neighbour_gain
from knowledge.search_scope import fts_query_text, scoped_read
from knowledge.search_standard import Standard, standard_fused_ctes, standard_vec_ctes, vector_spread
from knowledge.search_vector import execute_fusion, prefilter_rows, vec_cte, vector_literal, vector_params

logger = logging.getLogger(__name__)

Mode = Literal["hybrid", "fts", "vector"]
MODES: tuple[Mode, ...] = ("hybrid", "fts", "vector")
# Full-text candidates come from the query's rarer terms, within this many estimated postings (rows the GIN
# index must list) in the caller's scope, plus the rows matching the whole query; at most `Fusion.fts_scan_cap`
# of each (knowledge/search_scope.py). Session search's budget; knowledge search takes a quarter of it
# (`Fusion.fts_postings`).
FTS_POSTINGS_BUDGET = 20000
# A scope of at most this many rows is searched exactly: every distance computed (no HNSW walk) and every
# full-text match scored (no candidate cap). One project's sessions or knowledge are usually this small.
EXACT_ROWS = 10000
# ... unless the scope is more than this many rows and at least `Fusion.walk_share` of the whole table: a walk of the
# index then meets mostly rows of the scope and finds what reading every row finds, at a fraction of the cost (an
# open over 10,000 knowledge rows, all of them the caller's, took 51 ms p50 exact and 16 with the walk, with the same
# source rule in the 5 hits for 199 of 200 prompts; docs/benchmarks.md, issue 17, nineteenth pass). Small scopes stay
# exact: reading them is cheap.
EXACT_FLOOR = 2000
# A length penalty on cosine similarity for long rows only (`Fusion.vector_long_lexemes`, `vector_length_b`): a
# row of more than L distinct lexemes has its similarity divided by 1 + b * (length / L - 1); shorter rows keep
# plain cosine. MiniLM was trained on short texts and its mean-pooled vector of a long reply drifts toward the
# topic of the conversation, so it sits close to every question about that topic. Normalising every row to
# the average length instead (BM25's pivot, session 3) helped LongMemEval but lifted one-line chat turns
# ("Haha yes") over the facts on short speaker-prefixed chat; a penalty above a fixed length leaves such
# turns exact. Off by default (knowledge search); session search sets L = 48, b = 0.5: on LongMemEval dev120
# vector turn recall@10 0.761 -> 0.829, on MemoryBank unchanged (docs/benchmarks.md, issue 16).
VECTOR_LONG_LEXEMES = 0
VECTOR_LENGTH_B = 0.0
# The same penalty on the BM25 score of long rows (`Fusion.fts_long_lexemes`, `fts_length_b`): a row of more than L
# distinct lexemes has its score divided by 1 + b * (length / L - 1). BM25's own length normalisation (b 0.75
# inside the saturated term frequency, relative to the matching rows' average length) bounds what a long row loses
# per term, so a long assistant reply that mentions the query's topic words once each still outranks the short
# turn that states the fact. Dividing the whole score is Singhal's pivoted normalisation, which session 3's
# `ts_rank` score did for every row (LongMemEval fts turn recall@10 0.812 against BM25's 0.774) and which cost
# short chat when it lifted short rows; above a fixed length only, chat turns keep plain BM25. Off by default
# (knowledge search); session search sets L = 48, b = 0.5, the vector list's values (docs/benchmarks.md, sixth step).
FTS_LONG_LEXEMES = 0
FTS_LENGTH_B = 0.0
# Per-query fusion shares (`Fusion.adaptive`): a list whose first SHAPE_HEAD scores stand further above the rest
# of its own scores (in standard deviations) gets the larger share, in proportion to that distance (to its
# SHAPE_POWER), never less than SHAPE_FLOOR of its configured weight nor more than 2 - SHAPE_FLOOR. Fixed equal
# shares fell below the better list on both short-chat sets (vector on MemoryBank, full text on REALTALK). The
# full-text head's distance is also scaled by its best BM25 score over SHAPE_FTS_FULL (at most 1): on
# MemoryBank the full-text list found the evidence in its top 5 for 26 % of the questions whose best score was
# under 4 and for 96 % of those over 12, while the vector list's hit rate moved far less (docs/benchmarks.md,
# issue 16, ninth step). A list's shape says how its head stands out; its best score says whether the head
# matched anything rare at all.
SHAPE_HEAD = 5
SHAPE_POWER = 1
SHAPE_FLOOR = 0.5
SHAPE_FTS_FULL = 16.0
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
    # An SQL expression (over the same parameters) that gives the scope's row count without reading its rows;
    # blank: the rows are counted (`knowledge.search_scope.scoped_read`).
    rows_sql: str = ""
    # Disjoint SQL conditions over the columns of the table's vector-scope index (knowledge's
    # `knowledge_vector_scope`) whose rows together hold every row of the scope: an exact vector list picks its
    # candidates from that index alone (`knowledge.search_vector.vec_cte`). Empty: the list reads every row.
    prefilter: tuple[str, ...] = ()

    def narrowed(self, condition: str, **params: Any) -> Scope:
        """This scope with one more SQL condition (AND) and its parameters; its rows are counted again, and its exact
        vector list reads every row: the index's candidates are chosen before the condition, so a narrow one could
        leave few of them."""
        return replace(self, sql=f"{self.sql} AND {condition}", params={**self.params, **params}, rows_sql="",
                       prefilter=())


@dataclass(frozen=True)
class Fusion:
    """How the two lists are built and fused. These are the product's defaults; `BRAIN_RETRIEVAL` in settings
    holds only what the environment overrides (`knowledge.selectors.search.fusion_from_settings`)."""

    # A small k trusts the top of each list: on LongMemEval dev120, k = 5 / 10 / 20 / 60 gave hybrid turn
    # recall@5 0.765 / 0.736 / 0.703 / 0.700; the textbook 60 was the worst at every granularity (docs/retrieval.md).
    rrf_k: int = 5
    # The vector list's own k (0: rrf_k). Session search ranks by a top-heavy vector curve (k 1, full text 4): its
    # first rows are worth much more than its tenth, where the full-text list's curve is flatter (ninth step).
    rrf_k_vector: int = 0
    # More weight on vectors raised session recall and lowered turn recall on LongMemEval dev120 (docs/benchmarks.md).
    weight_vector: float = 1.0
    weight_fts: float = 1.0
    candidates: int = 50  # rows per list; also the HNSW ef_search (at least 40)
    # Nearest neighbours exist for any query; beyond this cosine distance they are not evidence (a value set with
    # the engine, not measured by a benchmark yet). Session search passes MAX_COSINE_DISTANCE: no cut.
    max_distance: float = 0.75
    # Knowledge search's postings budget. Its pool keeps at most `fts_scan_cap` rows of the generating terms,
    # in the index's order, so postings far beyond the cap only add rows that hold a commoner term in place of
    # rows that hold a rarer one, and the GIN index lists them all on every open. At 100,000 rows 5,000 took
    # the full-text statement from 9.0-9.4 to 6.0-6.6 ms p50 with a copy of the source rule among the 5 hits
    # for 200 of 200 prompts, as at 20,000 (docs/benchmarks.md, issue 17, twelfth pass); session search keeps
    # FTS_POSTINGS_BUDGET with its wider pool.
    fts_postings: int = FTS_POSTINGS_BUDGET // 4
    # Full-text candidates of each kind (rare-term rows, whole-query rows) when the scope is too large to search
    # exactly. Knowledge search, which every session open runs, takes 200: at 100,000 rows a search took 14.4 ms
    # p50 at 500, 11.6 at 250 and 10.7 at 150, with the same 5 hits for 200 of 200 prompts at each
    # (docs/benchmarks.md, issue 17, tenth pass); session search keeps FTS_SCAN_CAP (a large project's short turns
    # need the wider pool).
    fts_scan_cap: int = 200
    vector_long_lexemes: int = VECTOR_LONG_LEXEMES  # 0: plain cosine
    vector_length_b: float = VECTOR_LENGTH_B
    fts_long_lexemes: int = FTS_LONG_LEXEMES  # 0: plain BM25
    fts_length_b: float = FTS_LENGTH_B
    # The share of each neighbouring row's words and length a row's BM25 counts (knowledge/search_neighbours.py),
    # for tables whose rows form sequences (`hybrid_candidates(order=...)`); 0: the row's own words alone.
    fts_neighbours: float = 0.0
    # The share of each found neighbour's fused score a fused row adds, for such tables, when both lists are fused
    # (knowledge/search_neighbours.py); 0: each row's own.
    neighbours: float = 0.0
    # The share of the fused score of each found row two places away, for such tables; 0: none.
    neighbours_far: float = 0.0
    neighbour_lexemes: int = 20  # both neighbour terms join only rows of at most this many distinct lexemes
    exact_rows: int = EXACT_ROWS  # scopes of at most this many rows are searched exactly (0: never)
    exact_floor: int = EXACT_FLOOR  # scopes of at most this many rows are searched exactly whatever their share
    # The share of the table above which a scope of more than `exact_floor` rows walks the index (0: never). Session
    # search keeps its scopes exact (its lists are held to exact cosine and plain BM25, docs/benchmarks.md, issue 16).
    walk_share: float = 0.5
    # What one entry a filtered walk of the HNSW index visits costs, in rows read by an exact vector list: an exact
    # scope whose walk costs less walks for its vector list only (`knowledge.search_scope.walk_pays`); 0: never.
    # 7.7 us a visit against 2.3 us a row read at 8,000 of 208,000 rows, 5.8 against 2.6 at 3,000 (docs/benchmarks.md,
    # issue 17, twenty-eighth pass).
    walk_cost: float = 3.0
    # An exact vector list of a scope with a prefilter (`Scope.prefilter`) ranks the scope's rows by the Hamming
    # distance of their vectors' signs, read from the index alone, and computes the true distance of this many times
    # `candidates` rows only (0: every row's). Such a scope never walks the HNSW index. A project of 5,000 rows among
    # 105,000, 150 searches (docs/benchmarks.md, issue 17, thirty-ninth pass): the same five hits as every row's
    # distance gives for 146 hybrid and 150 vector searches at 4 (148 and 150 at 8; 96 and 94 for the walk), and an
    # open in 17.3-17.8 ms p50 at 4, 18.2 at 8, 24.5 walked.
    prefilter_factor: int = 4
    # Per-query list shares from score shape (`_weights_cte`). Session search turns it on; knowledge search
    # keeps fixed shares because its injection floor is calibrated on them (docs/benchmarks.md, issue 16).
    adaptive: bool = False
    # The least share of its weight either list keeps when the shares are per query (at most 2 - share_floor).
    share_floor: float = SHAPE_FLOOR
    # Each list's standard score (z: the row's score in standard deviations above the scope's mean) times this is
    # added to the row's reciprocal rank in that list; 0: ranks alone (knowledge search). knowledge/search_standard.py.
    standard_weight: float = 0.0


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
    # "hybrid", "fts", "vector" (what ran), "fts_only" (no vectors) or "vector_only" (the full-text list failed)
    retrieval: str
    rrf_max: float
    notice: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    standard: Standard | None = None  # with standard scores (a list that did not run: 0 and 0)


_EMPTY_VEC = "SELECT NULL::uuid AS id, NULL::bigint AS rnk, NULL::float8 AS dist WHERE false"


def _confidence(scores: str, ranks: str, source: str) -> str:
    """How far a list's head stands out of the list: the mean score of its first SHAPE_HEAD rows, in
    standard deviations above the mean of all its rows (0 for a list of fewer than 3 rows or a flat one)."""
    return f"""(SELECT CASE WHEN count(*) >= 3 AND stddev_pop({scores}) > 0
                THEN greatest((avg({scores}) FILTER (WHERE {ranks} <= {SHAPE_HEAD}) - avg({scores}))
                              / stddev_pop({scores}), 0) ELSE 0 END FROM {source})"""  # noqa: S608


def _weights_cte() -> str:
    """Each list's share of the fusion for this query (`adaptive`): the lists' head confidences (the full-text
    one scaled by its best score over SHAPE_FTS_FULL) as shares of 2, kept within [floor, 2 - floor];
    1 and 1 when neither head stands out or `adaptive` is off. The share multiplies the list's configured weight."""
    return f"""
    conf AS (SELECT power({_confidence("(1 - dist)", "rnk", "vec")}, {SHAPE_POWER}) AS cv,
                    power({_confidence("score", "rnk", "fts")}, {SHAPE_POWER})
                    * (SELECT COALESCE(least(max(score) / {SHAPE_FTS_FULL}, 1), 0) FROM fts) AS cf),
    shares AS (SELECT CASE WHEN %(adaptive)s AND cv + cf > 0
                           THEN least(greatest(2 * cv / (cv + cf), %(floor)s), 2 - %(floor)s)
                           ELSE 1 END AS sv FROM conf)"""  # noqa: S608 - constants and fixed SQL only


def _sql(table: str, columns: str, scope: Scope, *, use_vec: bool, exact: bool, smooth: RowOrder | None,
         standard: bool = False, prefilter: int = 0) -> str:
    """The fusion: the vector list ranked here, the full-text list as the arrays its own statement returned;
    with `smooth`, each fused score plus a share of its found neighbours' and of the found rows two places away
    (knowledge/search_neighbours.py); with `standard` (and vectors), each list's standard scores added
    (knowledge/search_standard.py) and the scope's mean and spread of similarity returned with every row
    (`vec_mu`, `vec_sd`). `prefilter`: the rows an exact vector list takes from the scope's index (`vec_cte`)."""
    ranked = "fused_near" if smooth else "fused"
    if standard and use_vec:
        return f"""
    WITH {standard_vec_ctes(table, scope, exact=exact)}
    fts AS (SELECT id, rnk, score, (score - %(fmu)s) / nullif(%(fsd)s, 0) AS z
            FROM unnest(%(fts_id)s::uuid[], %(fts_score)s::float8[]) WITH ORDINALITY AS f(id, score, rnk)),
    {standard_fused_ctes(table, scope, head=SHAPE_HEAD, fts_full=SHAPE_FTS_FULL)}
    {"," + fused_neighbour_ctes(table, smooth) if smooth else ""}
    SELECT {ranked}.*, {columns}, s.mu AS vec_mu, s.sd AS vec_sd
    FROM {ranked} JOIN {table} t ON t.id = {ranked}.fused_id CROSS JOIN vec_stat s
    ORDER BY rrf DESC, t.id LIMIT %(n)s"""  # noqa: S608
    return f"""
    WITH vec AS ({vec_cte(table, scope, exact=exact, prefilter=prefilter) if use_vec else _EMPTY_VEC}),
    fts AS (SELECT id, rnk, score FROM unnest(%(fts_id)s::uuid[], %(fts_score)s::float8[]) WITH ORDINALITY
            AS f(id, score, rnk)),
    {_weights_cte()},
    fused AS (
        SELECT COALESCE(vec.id, fts.id) AS fused_id, vec.rnk AS vec_rank, vec.dist AS vec_distance,
               fts.rnk AS fts_rank, fts.score AS fts_score,
               COALESCE(shares.sv * %(wv)s / (%(kv)s + vec.rnk), 0)
               + COALESCE((2 - shares.sv) * %(wf)s / (%(k)s + fts.rnk), 0) AS rrf
        FROM vec FULL OUTER JOIN fts ON vec.id = fts.id CROSS JOIN shares)
    {"," + fused_neighbour_ctes(table, smooth) if smooth else ""}
    SELECT {ranked}.*, {columns} FROM {ranked} JOIN {table} t ON t.id = {ranked}.fused_id
    ORDER BY rrf DESC, t.id LIMIT %(n)s"""  # noqa: S608


def _query_vector(embedding: Future[tuple[str, str]] | None) -> tuple[str | None, str, str]:
    """The query vector (as its SQL literal) and model, or None with the reason when vectors cannot be used."""
    if embedding is None:
        return None, "", ""
    try:
        vector, model = embedding.result()
    except EmbeddingUnavailable as exc:
        log_op(logger, "retrieval.fts_only", level=logging.WARNING, reason=str(exc)[:200])
        return None, "", str(exc)
    return vector, model, ""


def hybrid_candidates(
    *, table: str, columns: str, scope: Scope, query: str, mode: Mode, fusion: Fusion, order: RowOrder | None = None,
) -> CandidateSet:
    """Top `fusion.candidates` rows of `table` inside `scope`, fused by RRF; falls back to FTS alone. With
    `order` (rows in sequences, such as a session's events), a row's full-text score counts its neighbours' words
    (`fusion.fts_neighbours`) and its fused score its found neighbours' (`fusion.neighbours`).

    The model embeds the query on a pool thread while this thread ranks the full-text list in PostgreSQL (one
    statement); the fusion statement then ranks the vector list and fuses it with the full-text list's rows.
    Both halves cost a few milliseconds, so a hybrid search waits for the longer one instead of their sum."""
    started = time.perf_counter()
    embedding = embed_query_soon(query, vector_literal) if mode != "fts" else None
    text = fts_query_text(query)
    with connection.cursor() as cursor:
        scoped = scoped_read(cursor, table, scope, text, fusion)
        fts, fts_failed = FtsList(), ""
        if mode == "hybrid":
            fts, fts_failed = fts_list_or_reason(cursor, table, scope, text, scoped, fusion, order)
        elif mode == "fts":
            fts = fts_list(cursor, table, scope, text, scoped, fusion, order)
        waiting = time.perf_counter()
        vector, model, notice = _query_vector(embedding)
        waited = time.perf_counter() - waiting
        use_vec = vector is not None
        if not use_vec and mode == "vector":  # no vectors after all: the full-text list stands in
            fts = fts_list(cursor, table, scope, text, scoped, fusion, order)
        use_fts = not fts_failed and (mode != "vector" or not use_vec)
        notice = " ".join(n for n in (fts_failed, notice) if n)
        smoothing = fusion.neighbours > 0 or fusion.neighbours_far > 0
        smooth = order if order and smoothing and use_vec and use_fts else None
        params = _fusion_params(scope, fusion, vector, model, use_fts=use_fts) | {
            "fts_id": fts.ids, "fts_score": fts.scores, "fmu": fts.mu, "fsd": fts.sd,
            "nbfused": fusion.neighbours if smooth else 0.0, "nblex": fusion.neighbour_lexemes,
            "nbfar": fusion.neighbours_far if smooth else 0.0}
        standard = fusion.standard_weight > 0
        exact = scoped.vectors_exact
        statement = _sql(table, columns, scope, use_vec=use_vec, exact=exact, smooth=smooth, standard=standard,
                         prefilter=prefilter_rows(scope, fusion) if exact else 0)
        execute_fusion(cursor, statement, params, walks=use_vec and not exact, generic=smooth is None)
        names = [col.name for col in cursor.description or []]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    spread = vector_spread(rows) if standard and use_vec else (0.0, 0.0)
    retrieval = ("vector_only" if fts_failed else mode) if (use_vec or mode == "fts") else "fts_only"
    rrf_max = fused_max(params["wv"], params["wf"], fusion, adaptive=params["adaptive"]) * neighbour_gain(
        params["nbfused"], params["nbfar"])
    total = time.perf_counter() - started
    timings = {"model_wait": round(waited * 1000, 3), "sql": round((total - waited) * 1000, 3)}
    return CandidateSet([_candidate(row) for row in rows], retrieval, rrf_max, notice, timings,
                        standard=Standard(*spread, fts.mu, fts.sd) if standard else None)


def _fusion_params(scope: Scope, fusion: Fusion, vector: str | None, model: str, *,
                   use_fts: bool) -> dict[str, Any]:
    use_vec = vector is not None
    return {
        **vector_params(scope, fusion, vector, model), "k": float(fusion.rrf_k),
        "kv": float(fusion.rrf_k_vector or fusion.rrf_k),
        "wv": fusion.weight_vector if use_vec else 0.0, "wf": fusion.weight_fts if use_fts else 0.0,
        "adaptive": fusion.adaptive and use_vec and use_fts,
        # A list alone keeps its own order and scores: standard scores only weigh one list against the other.
        "floor": fusion.share_floor, "sw": fusion.standard_weight if use_vec and use_fts else 0.0,
    }


def fused_max(weight_v: float, weight_f: float, fusion: Fusion, *, adaptive: bool) -> float:
    """The fused score of a row ranked first by both lists, at the shares that make it largest (the score is
    linear in the vector share, so one end of the shares' range gives it)."""
    top_v, top_f = weight_v / ((fusion.rrf_k_vector or fusion.rrf_k) + 1), weight_f / (fusion.rrf_k + 1)
    if not adaptive:
        return top_v + top_f
    return max(share * top_v + (2 - share) * top_f for share in (fusion.share_floor, 2 - fusion.share_floor))


def _candidate(row: dict[str, Any]) -> Candidate:
    return Candidate(
        id=row.pop("fused_id"), rrf=float(row.pop("rrf")), vec_rank=row.pop("vec_rank"),
        vec_distance=row.pop("vec_distance"), fts_rank=row.pop("fts_rank"), fts_score=row.pop("fts_score"), row=row,
    )
