"""The vector list of a hybrid search (`knowledge.search`): its SQL and parameters, and how the fusion statement
runs when it walks the HNSW index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brain.sql_rows import execute_generic, local_settings
from knowledge.search_standard import long_row_penalty

if TYPE_CHECKING:
    from knowledge.search import Fusion, Scope


def vec_cte(table: str, scope: Scope, *, exact: bool, prefilter: int = 0) -> str:
    """The nearest rows by cosine distance, ranked by their similarity with long rows penalised (see
    `knowledge.search.VECTOR_LONG_LEXEMES`; length counts distinct lexemes, as the full-text side does).

    `exact`: a scope of at most `Fusion.exact_rows` rows is ranked by computing every distance (the `+ 0` keeps the
    planner off the HNSW index). The index serves the whole table: under a filter to one small project its
    graph walk meets mostly other projects' rows, and even with iterative scans it returned a third fewer
    of the true nearest turns than exact search on short dialogue turns (docs/benchmarks.md).

    `prefilter` (`prefilter_rows` of an exact list, else 0): the true distance is computed for this many rows, the
    scope's nearest by their vectors' signs (`prefiltered`), instead of for every row of the scope."""
    # Ordered by the selected distance itself, so each row's distance is computed (and its vector read from the
    # TOAST table) once: an ORDER BY of its own expression computed it twice, a third of an exact list's time.
    distance = "(t.embedding <=> %(qvec)s::vector) + 0" if exact else "t.embedding <=> %(qvec)s::vector"
    penalty = long_row_penalty("%(lenb)s", "len", "%(longlex)s")
    picked = f" AND t.id IN ({prefiltered(table, scope, prefilter)})" if prefilter > 0 else ""
    return f"""
        SELECT id, row_number() OVER (ORDER BY (1 - dist) / {penalty} DESC, id) AS rnk, dist
        FROM (SELECT t.id, {distance} AS dist, greatest(length(t.search_vector), 1) AS len
              FROM {table} t
              WHERE {scope.sql} AND t.embedding IS NOT NULL AND t.embedding_model = %(qmodel)s{picked}
              ORDER BY dist LIMIT %(n)s) nearest
        WHERE dist <= %(maxdist)s"""  # noqa: S608 - names and fixed SQL only; values are parameters


def prefilter_rows(scope: Scope, fusion: Fusion) -> int:
    """How many rows an exact vector list of `scope` takes from its index before computing true distances; 0: none
    (the scope has no prefilter or the fusion turns it off)."""
    return fusion.prefilter_factor * fusion.candidates if scope.prefilter and fusion.prefilter_factor > 0 else 0


def prefiltered(table: str, scope: Scope, rows: int) -> str:
    """The ids of the `rows` rows of `scope` whose vectors' signs differ least from the query's, read from the
    vector-scope index alone (an index-only scan of each `Scope.prefilter` condition; the heap is not read): 48
    bytes a row instead of the row and its vector, which in a row of over 2 KB is another read from the TOAST
    table. Rows of another model are left out here, as the list leaves them out. What the conditions admit beyond the
    scope (rows decayed out, held for review) takes a place among the `rows` and is dropped by the scope's own
    condition afterwards."""
    apart = "t.embedding_bits <~> binary_quantize(%(qvec)s::vector)"
    branches = [f"""(SELECT t.id, {apart} AS apart FROM {table} t
        WHERE {condition} AND t.embedding IS NOT NULL AND t.embedding_model = %(qmodel)s
        ORDER BY apart LIMIT {int(rows)})""" for condition in scope.prefilter]  # noqa: S608 - names, fixed SQL
    if len(branches) == 1:
        return f"SELECT id FROM {branches[0]} b"  # noqa: S608
    return f"SELECT id FROM ({' UNION ALL '.join(branches)}) b ORDER BY apart LIMIT {int(rows)}"  # noqa: S608


def vector_params(scope: Scope, fusion: Fusion, vector: str | None, model: str) -> dict[str, Any]:
    """The vector list's parameters (`vec_cte`, `walk_settings`); `vector`: the query's, as `vector_literal` wrote
    it."""
    return {
        **scope.params, "qvec": vector, "qmodel": model, "n": fusion.candidates,
        "maxdist": fusion.max_distance, "longlex": max(fusion.vector_long_lexemes, 1),
        "lenb": fusion.vector_length_b if fusion.vector_long_lexemes > 0 else 0.0,
        "ef": walk_ef(fusion),
    }


def walk_ef(fusion: Fusion) -> int:
    """The HNSW walk's `ef_search`: the rows each list wants, and at least pgvector's default of 40."""
    return max(40, int(fusion.candidates))


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def walk_settings(ef: int) -> tuple[tuple[str, str], ...]:
    """The settings a fusion statement that walks the HNSW index runs under (`brain.sql_rows.local_settings`):
    filtered scans keep going until enough rows pass the scope (pgvector >= 0.8), `ef_search` is at least the rows
    wanted, and sorting is priced out, so the plan takes its order from the index. They are set in the statement's
    own query string, so the search needs no transaction of its own: its BEGIN and COMMIT were two round trips of
    every open.

    The search walks because its own count said the walk costs less (`knowledge.search_scope`); the planner, guessing
    a project's rows from the table's average, chose to sort the whole scope instead. Every plan of the statement
    sorts the fused rows, so only that sort of the scope is priced out: a project of 8,000 rows among 30,000 took
    19.5 ms on the sort and 3.9 on the walk (docs/benchmarks.md, issue 17, thirty-third pass)."""
    return (("hnsw.iterative_scan", "relaxed_order"), ("hnsw.ef_search", str(int(ef))), ("enable_sort", "off"))


def execute_fusion(cursor: Any, statement: str, params: dict[str, Any], *, walks: bool, generic: bool) -> None:
    """Runs the fusion statement; one that walks the HNSW index runs under `walk_settings`.
    Such a statement over a large scope (`generic`: no neighbour terms) is prepared once per connection and run on
    its generic plan, whose shape never depends on the values (an index walk, a hash join with the full-text
    arrays, the rows by primary key): planning it took 0.5-0.7 ms of its 2.3 at 100,000 rows (docs/benchmarks.md,
    issue 17, eighteenth pass). Its row counts are written into the statement, so the plan knows its LIMIT and
    never weighs sorting the whole scope against the walk."""
    if not walks:
        cursor.execute(statement, params)
        return
    if not generic:
        before, after = local_settings(walk_settings(params["ef"]))
        cursor.execute(f"{before}; {statement}{after}", params)
        cursor.nextset()
        return
    execute_generic(cursor, "fusion", statement, params, counts=("n",), settings=walk_settings(params["ef"]))
