"""What both lists of a hybrid search need to know of the caller's scope and of the query, read in one round trip
before either list runs: the query's lexemes, the scope's size (counted when small, estimated from the statistics
otherwise), whether the scope is searched exactly, and the full-text candidate terms and caps that follow."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from knowledge.models import TS_CONFIG
from knowledge.search_vector import prefilter_rows, walk_ef
from knowledge.term_stats import TermStats, generating_terms, term_stats

if TYPE_CHECKING:
    from knowledge.search import Fusion, Scope

# Session search's cap on full-text candidates of each kind (rare-term rows, whole-query rows) in a scope too large
# to be searched exactly; each search takes its `Fusion.fts_scan_cap` (knowledge search's default is 200).
FTS_SCAN_CAP = 500
# The least cap of a scope of at most `Fusion.exact_rows` rows that walks the index for being most of the table.
# Knowledge search's cap of 200 suits 100,000 rows; at 10,000 it lost the source rule from the 5 hits of 2 prompts of
# 200 (`brain bench retrieval-scale`), which 500 kept, at 8.0 against 7.9 ms p50 (docs/benchmarks.md, issue 17,
# nineteenth pass).
WALKED_SCAN_CAP = 500


# A run of hyphens that does not join two word characters: a bullet ("- Follow ..."), a command-line flag ("--force"), a
# YAML or Markdown rule ("---", "|---|"), an arrow ("->"). `websearch_to_tsquery` reads each leading hyphen as a NOT.
_LOOSE_HYPHENS = re.compile(r"(?<!\w)-+|-+(?!\w)")


def fts_query_text(query: str) -> str:
    """`query` as `websearch_to_tsquery` should read it: its quoted phrases and its "or" keep their meaning, but a
    hyphen that does not join two words becomes a space. Agents' prompts are not web searches: one in ten prompts cut
    from real rule files had a term negated (a bullet's "- Follow" turned into NOT follow, which kept the rows that
    follow the advice out of the whole-query candidates), and a Markdown table's "|---|---|" stacked more negations
    than PostgreSQL's parser holds ("tsquery stack too small"; docs/retrieval.md).
    Hyphens inside a word ("real-time", "1e-6") are left to PostgreSQL, which indexes the compound and its parts."""
    return _LOOSE_HYPHENS.sub(" ", query)


@dataclass(frozen=True)
class Scoped:
    """What both lists need to know of the scope and of the query, read in one round trip (`scoped_read`)."""

    stats: TermStats
    rows: float  # the scope's rows: counted when small, else the statistics' estimate
    exact: bool  # at most `Fusion.exact_rows` rows: searched exactly
    lexemes: list[str]  # the query's
    # An exact scope whose vector list still walks the HNSW index (`walk_pays`); its full-text list stays exact.
    walk_vectors: bool = False

    @property
    def vectors_exact(self) -> bool:
        """Whether the vector list computes every distance of the scope instead of walking the index."""
        return self.exact and not self.walk_vectors


def scoped_read(cursor: Any, table: str, scope: Scope, query: str, fusion: Fusion) -> Scoped:
    """The query's lexemes and the scope's size. A scope the statistics put well above `exact_rows` is not
    counted (its vector list will walk the index); a smaller one is counted, at most `exact_rows` + 1 rows (the
    scope's own indexes, a few milliseconds) or by its `rows_sql`, and searched exactly unless it is most of the
    table (by the statistics, then uncounted, or by its count)."""
    stats, limit = term_stats(table), fusion.exact_rows
    estimate = stats.scope_rows(scope.project_ids, unassigned=scope.unassigned)
    # Counting reads every row of the scope (7 ms at 10,000 knowledge rows): not for one whose projects' own shares
    # in the statistics already make it most of the table (an unlisted project's share is only an average).
    walks = stats.listed(scope.project_ids) and _mostly_the_table(estimate, stats.rows, fusion)
    key = _scope_key(table, scope, limit) if limit > 0 and estimate <= 4 * limit and not walks else None
    known_large = key is not None and _large_until.get(key, 0.0) > time.monotonic()
    counting = key is not None and not known_large
    counted_rows = f"(SELECT count(*) FROM (SELECT 1 FROM {table} t WHERE {scope.sql} LIMIT {int(limit) + 1}) s)"  # noqa: S608
    extra = (scope.rows_sql or counted_rows) if counting else "NULL"
    cursor.execute(f"SELECT tsvector_to_array(to_tsvector('{TS_CONFIG}', %(qtext)s)), {extra}",
                   {**scope.params, "qtext": query})
    lexemes, counted = cursor.fetchone()
    if counted is None or key is None:  # not counted (only a scope with a key is)
        return Scoped(stats, max(estimate, float(limit + 1)) if known_large else estimate, False, list(lexemes))
    if counted > limit:
        _remember_large(key)
        return Scoped(stats, max(estimate, float(counted)), False, list(lexemes))
    exact = not _mostly_the_table(counted, stats.rows, fusion)
    # A prefiltered exact list reads the scope's index entries, not its rows: cheaper than a walk at any exact size.
    walk = exact and not prefilter_rows(scope, fusion) and walk_pays(counted, stats.rows, fusion)
    return Scoped(stats, float(counted), exact, list(lexemes), walk_vectors=walk)


# Scopes a count found above the exact limit, and until when that is taken as known, per process. Counting one reads
# limit + 1 of its rows through the scope's index and their heap pages (12 ms for a project of 30,000 rows among
# 230,000, docs/benchmarks.md, issue 17, twenty-fifth pass), and all it tells is "too many to search exactly". A
# smaller scope is counted on every search: its count is BM25's row count, which a write must change at once.
LARGE_FOR_S = 60.0
LARGE_SCOPES_MAX = 4096
_large_until: dict[tuple[Any, ...], float] = {}


def _remember_large(key: tuple[Any, ...]) -> None:
    if len(_large_until) >= LARGE_SCOPES_MAX:  # a bound, not an eviction order: the next searches count again
        _large_until.clear()
    _large_until[key] = time.monotonic() + LARGE_FOR_S


def forget_large() -> None:
    """Forget which scopes were found large (tests; a benchmark that reloads its rows)."""
    _large_until.clear()


def _scope_key(table: str, scope: Scope, limit: int) -> tuple[Any, ...]:
    return (table, scope.sql, limit, *sorted((name, repr(value)) for name, value in scope.params.items()))


def _mostly_the_table(rows: float, table_rows: float, fusion: Fusion) -> bool:
    """A scope above `exact_floor` rows that holds at least `walk_share` of the table (the statistics' row count):
    the HNSW walk's filter passes most rows it meets, so the walk serves it as well as reading every row."""
    return fusion.walk_share > 0 and rows > fusion.exact_floor and rows >= fusion.walk_share * table_rows


def walk_pays(rows: float, table_rows: float, fusion: Fusion) -> bool:
    """A counted scope above `exact_floor` rows whose vector list costs less as a walk of the HNSW index than as a
    distance for every row. Reading the scope costs about `rows` row reads; a walk filtered to the scope visits about
    `ef / share` index entries to find `ef` of its rows (share = rows / table_rows), each `Fusion.walk_cost` row reads.
    So the walk pays when rows^2 >= walk_cost * ef * table_rows: above about 5,600 rows of a 208,000-row table,
    10,000 of 670,000. Measured on 208,000 rows (docs/benchmarks.md, issue 17, twenty-eighth pass): a scope of 8,000
    rows 18.7 ms exact against 10.0 walked, with the same 10 nearest rows for 198 prompts of 200 and the same
    nearest one for all; one of 3,000 rows 7.8 against 19.7. Session search never walks (`walk_share` 0)."""
    return (fusion.walk_share > 0 and fusion.walk_cost > 0 and rows > fusion.exact_floor
            and rows * rows >= fusion.walk_cost * walk_ef(fusion) * table_rows)


# How many entries of the scope's own index cost what one visit of a matching row costs. The full-text pool of a
# scope too large to search exactly reads either the scope's index into a bitmap (one entry a row of the scope) or the
# term matches one by one until `cap` of them pass the scope (about cap / share visits). Measured at 100,000-row
# projects among 130,000-330,000 rows: matches first won at rows x share of 77,000 and 43,000 (9.2 -> 5.1 and 11.0 ->
# 6.2 ms), lost at 30,000 (12.0 -> 13.6) and below (7 -> 14 ms at 6,900): docs/benchmarks.md, issue 17,
# twenty-fifth pass.
INDEX_ENTRIES_PER_VISIT = 200
# The largest share of the table a scope searched exactly reads row by row, never through the term index: the index
# lists every posting of every query term across the whole table, whatever the scope. Measured at 210,000 rows: a
# scope of 300 rows 6.3 -> 1.9 ms, of 2,000 rows 7.6 -> 5.4 ms, of 8,000 rows 11.8 -> 21 ms (the same pass).
SCOPE_FIRST_SHARE = 0.01

PoolRead = Literal["planner", "matches_first", "scope_first"]


def pool_read(scoped: Scoped, cap: int) -> PoolRead:
    """How the full-text pool reads the scope's matching rows (`scope_matching`): the scope's rows first for a small
    scope in a large table, the term index's matches first for a large scope holding so much of the table that finding
    `cap` of its rows among them costs less than listing all of its rows, else as the planner chooses."""
    if scoped.stats.rows <= 0:
        return "planner"
    share = min(1.0, scoped.rows / scoped.stats.rows)
    if scoped.exact:
        return "scope_first" if share <= SCOPE_FIRST_SHARE else "planner"
    return "matches_first" if scoped.rows * share >= cap * INDEX_ENTRIES_PER_VISIT else "planner"


def scope_matching(table: str, scope: Scope, tsquery: str, *, read: PoolRead) -> str:
    """The FROM and WHERE of the scope's rows matching `tsquery`, as the alias `t`, read as `pool_read` chose. A
    subquery with OFFSET 0 keeps the planner from moving the outer condition into it: `matches_first` reads the term
    index and filters by the scope (the planner also read the scope's own index into a bitmap of all its rows, 4.9 ms
    for a project of 100,000); `scope_first` reads the scope's rows and tests each against the query (the planner also
    listed the term index's postings across the whole table: docs/benchmarks.md, issue 17, twenty-fifth pass)."""
    if read == "matches_first":
        return (f"(SELECT * FROM {table} t WHERE t.search_vector @@ {tsquery} OFFSET 0) t "  # noqa: S608
                f"WHERE {scope.sql}")
    if read == "scope_first":
        return (f"(SELECT * FROM {table} t WHERE {scope.sql} OFFSET 0) t "  # noqa: S608
                f"WHERE t.search_vector @@ {tsquery}")
    return f"{table} t WHERE {scope.sql} AND t.search_vector @@ {tsquery}"


def fts_terms(scoped: Scoped, fusion: Fusion) -> dict[str, Any]:
    """The query's lexemes (all of them score), the ones that generate candidates (all of them in a small
    scope, else the rarer ones), the pool cap, and each lexeme's estimated rows in the scope, which stands
    in for its count in a capped pool (0: the pool holds every matching row, its own count is exact)."""
    lexemes, stats, rows, exact = scoped.lexemes, scoped.stats, scoped.rows, scoped.exact
    generating = lexemes if exact else generating_terms(lexemes, stats, fusion.fts_postings, rows)
    estimates = [0.0 if exact else stats.lexeme_share(lex) * rows for lex in lexemes]
    cap = max(fusion.exact_rows, fusion.fts_scan_cap) if exact else fusion.fts_scan_cap
    if not exact and rows <= fusion.exact_rows:  # a scope that walks only for being most of the table
        cap = max(cap, WALKED_SCAN_CAP)
    return {"lexemes": lexemes, "lex_df": estimates, "fts_cap": cap,
            "tsq_gen": " | ".join(map(_tsquery_lexeme, generating)) or None}


def _tsquery_lexeme(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (tsquery input escapes with backslash and doubled quotes)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
