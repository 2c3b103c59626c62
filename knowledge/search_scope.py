"""What both lists of a hybrid search need to know of the caller's scope and of the query, read in one round trip
before either list runs: the query's lexemes, the scope's size (counted when small, estimated from the statistics
otherwise), whether the scope is searched exactly, and the full-text candidate terms and caps that follow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowledge.models import TS_CONFIG
from knowledge.term_stats import TermStats, generating_terms, term_stats

if TYPE_CHECKING:
    from knowledge.search import Fusion, Scope

# Session search's cap on full-text candidates of each kind (rare-term rows, whole-query rows) in a scope too large
# to be searched exactly; each search takes its `Fusion.fts_scan_cap` (knowledge search's default is 200).
FTS_SCAN_CAP = 500


@dataclass(frozen=True)
class Scoped:
    """What both lists need to know of the scope and of the query, read in one round trip (`scoped_read`)."""

    stats: TermStats
    rows: float  # the scope's rows: counted when small, else the statistics' estimate
    exact: bool  # at most `Fusion.exact_rows` rows: searched exactly
    lexemes: list[str]  # the query's


def scoped_read(cursor: Any, table: str, scope: Scope, query: str, fusion: Fusion) -> Scoped:
    """The query's lexemes and the scope's size. A scope the statistics put well above `exact_rows` is not
    counted (its vector list will walk the index); a smaller one is counted, at most `exact_rows` + 1 rows (the
    scope's own indexes, a few milliseconds)."""
    stats, limit = term_stats(table), fusion.exact_rows
    estimate = stats.scope_rows(scope.project_ids, unassigned=scope.unassigned)
    counting = limit > 0 and estimate <= 4 * limit
    extra = (f"(SELECT count(*) FROM (SELECT 1 FROM {table} t WHERE {scope.sql} LIMIT {int(limit) + 1}) s)"  # noqa: S608
             if counting else "NULL")
    cursor.execute(f"SELECT tsvector_to_array(to_tsvector('{TS_CONFIG}', %(qtext)s)), {extra}",
                   {**scope.params, "qtext": query})
    lexemes, counted = cursor.fetchone()
    if counted is None:
        return Scoped(stats, estimate, False, list(lexemes))
    exact = counted <= limit
    return Scoped(stats, float(counted) if exact else max(estimate, float(counted)), exact, list(lexemes))


def fts_terms(scoped: Scoped, fusion: Fusion) -> dict[str, Any]:
    """The query's lexemes (all of them score), the ones that generate candidates (all of them in a small
    scope, else the rarer ones), the pool cap, and each lexeme's estimated rows in the scope, which stands
    in for its count in a capped pool (0: the pool holds every matching row, its own count is exact)."""
    lexemes, stats, rows, exact = scoped.lexemes, scoped.stats, scoped.rows, scoped.exact
    generating = lexemes if exact else generating_terms(lexemes, stats, fusion.fts_postings, rows)
    estimates = [0.0 if exact else stats.lexeme_share(lex) * rows for lex in lexemes]
    cap = max(fusion.exact_rows, fusion.fts_scan_cap) if exact else fusion.fts_scan_cap
    return {"lexemes": lexemes, "lex_df": estimates, "fts_cap": cap,
            "tsq_gen": " | ".join(map(_tsquery_lexeme, generating)) or None}


def _tsquery_lexeme(lexeme: str) -> str:
    """A lexeme as a quoted tsquery operand (tsquery input escapes with backslash and doubled quotes)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
