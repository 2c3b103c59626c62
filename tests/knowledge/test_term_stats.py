"""Full-text candidate generation from the query's rarer terms, with term statistics read from ANALYZE."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from knowledge import search_scope, term_stats
from knowledge.models import KnowledgeItem
from knowledge.search import FTS_POSTINGS_BUDGET, Fusion, hybrid_candidates
from knowledge.search_scope import FTS_SCAN_CAP, WALKED_SCAN_CAP, Scoped, fts_terms, scoped_read
from knowledge.selectors.search import KNOWLEDGE_TABLE, fusion_from_settings, knowledge_scope, knowledge_search
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.term_stats import TermStats, generating_terms
from sessions.selectors.search import event_fusion
from tests.conftest import Tenant

STATS = TermStats(rows=1000, share={"common": 0.5, "middl": 0.05}, unlisted_share=0.01)


def test_the_rarest_terms_generate_within_the_budget() -> None:
    # postings in 1,000 rows: rare 10 (unlisted), middl 50, common 500
    assert generating_terms(["common", "middl", "rare"], STATS, budget=100, scope_rows=1000) == ["rare", "middl"]
    assert generating_terms(["common", "middl", "rare"], STATS, 1000, 1000) == ["rare", "middl", "common"]
    # The same terms in a scope of 100 rows touch a tenth as many: all of them fit.
    assert generating_terms(["common", "middl", "rare"], STATS, budget=100, scope_rows=100) == [
        "rare", "middl", "common"]


def test_at_least_one_term_generates_however_common() -> None:
    assert generating_terms(["common", "middl"], STATS, budget=1, scope_rows=1000) == ["middl"]
    assert generating_terms([], STATS, budget=1, scope_rows=1000) == []


def test_without_statistics_every_term_generates() -> None:
    assert generating_terms(["b", "a", "b"], TermStats(), budget=0, scope_rows=10**6) == ["a", "b"]


def test_scope_rows_from_project_statistics() -> None:
    stats = TermStats(rows=10_000, project_share={"big": 0.9}, other_project_share=0.001, null_project_share=0.05)
    assert stats.scope_rows(["big"], unassigned=False) == pytest.approx(9000)
    assert stats.scope_rows(["small", "tiny"], unassigned=True) == pytest.approx(520)
    assert TermStats(rows=10_000).scope_rows(["any"], unassigned=False) == 10_000  # no statistics: the table


@pytest.fixture
def analysed(tenant_a: Tenant, tenant_b: Tenant) -> Iterator[None]:
    """120 of tenant A's rules say "deploy"; three also name kubernetes, and one more names only kubernetes.
    Tenant B holds the same three."""
    drafts = [KnowledgeDraft(f"Deploy service number {n} through the release pipeline", type="rule")
              for n in range(117)]
    rare = [KnowledgeDraft(f"Deploy to kubernetes with helm chart version {n}", type="rule") for n in range(3)]
    other = KnowledgeDraft("Restart kubernetes pods with a rolling policy", type="heuristic")
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[*drafts, *rare, other])
    knowledge_create_many(owner=tenant_b.user, project=tenant_b.project, drafts=rare)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {KNOWLEDGE_TABLE}")
    term_stats.forget()
    yield
    term_stats.forget()


def test_statistics_come_from_the_table(tenant_a: Tenant, tenant_b: Tenant, analysed: None) -> None:
    stats = term_stats.term_stats(KNOWLEDGE_TABLE)
    assert stats.rows == pytest.approx(124, abs=1)  # tenant A's 121 rows and tenant B's 3
    assert stats.lexeme_share("deploy") > 0.9 > stats.lexeme_share("kubernet")
    assert stats.scope_rows([tenant_a.project.id], unassigned=False) == pytest.approx(121, abs=2)
    assert stats.scope_rows([tenant_b.project.id], unassigned=False) == pytest.approx(3, abs=2)


def _scoped(tenant: Tenant, fusion: Fusion) -> Scoped:
    with connection.cursor() as cursor:
        return scoped_read(cursor, KNOWLEDGE_TABLE, knowledge_scope(principal=tenant.principal), "deploy", fusion)


def test_a_scope_that_is_most_of_the_table_walks_the_index(tenant_a: Tenant, tenant_b: Tenant, analysed: None) -> None:
    """Tenant A holds 121 of the table's 124 rows, tenant B 3. Above the floor, A's scope walks the index (its
    statistics say so, so it is not even counted) and keeps a full-text pool of at least WALKED_SCAN_CAP; B's stays
    exact; below the floor, or with the share off (session search), A's is exact too."""
    walks = Fusion(exact_rows=1000, exact_floor=50, walk_share=0.5, fts_scan_cap=20)
    mine, theirs = _scoped(tenant_a, walks), _scoped(tenant_b, walks)
    assert not mine.exact and mine.rows == pytest.approx(121, abs=2)
    assert fts_terms(mine, walks)["fts_cap"] == WALKED_SCAN_CAP
    assert theirs.exact and theirs.rows == 3 and fts_terms(theirs, walks)["fts_cap"] == 1000
    assert _scoped(tenant_a, replace(walks, exact_floor=200)).exact
    assert _scoped(tenant_a, replace(walks, walk_share=0.0)).exact
    assert not _scoped(tenant_a, replace(walks, exact_rows=100)).exact  # too large for exact at all: as before
    assert fusion_from_settings().walk_share > 0 and event_fusion().walk_share == 0


@pytest.mark.parametrize(("rows", "table_rows", "walks"), [
    (8_000, 208_000, True), (3_000, 203_000, False),  # the two scopes measured (docs/benchmarks.md, 28th pass)
    (10_000, 600_000, True), (10_000, 700_000, False), (2_000, 10_000, False),  # at the exact floor: exact
])
def test_a_mid_size_scope_walks_for_its_vectors_where_the_walk_costs_less(rows: int, table_rows: int,
                                                                            walks: bool) -> None:
    knowledge = Fusion()
    assert search_scope.walk_pays(rows, table_rows, knowledge) is walks
    assert not search_scope.walk_pays(rows, table_rows, event_fusion())  # session search stays exact
    assert not search_scope.walk_pays(rows, table_rows, replace(knowledge, walk_cost=0.0))


def test_a_counted_scope_walks_for_its_vectors_and_keeps_its_full_text_exact(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None
) -> None:
    """Tenant A's 121 rows are not most of the 124 (share 0.99 asked) but their walk pays: the vector list walks
    the index, the full-text list still scores every match, and the hits are the exact search's. Tenant B's 3 rows
    stay exact, and none of A's rows ever reach B. (A scope whose exact list is prefiltered never walks: the
    prefilter is off here, as for a scope without one.)"""
    walking = Fusion(exact_rows=1000, exact_floor=50, walk_share=0.99, candidates=40, walk_cost=2.0, prefilter_factor=0)
    mine, theirs = _scoped(tenant_a, walking), _scoped(tenant_b, walking)
    assert mine.exact and mine.walk_vectors and not mine.vectors_exact and fts_terms(mine, walking)["fts_cap"] == 1000
    assert theirs.vectors_exact and not theirs.walk_vectors
    scope = knowledge_scope(principal=tenant_a.principal)
    found = {}
    for fusion in (walking, replace(walking, walk_cost=0.0)):
        with CaptureQueriesContext(connection) as queries:
            result = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=scope,
                                       query="deploy kubernetes with helm", mode="hybrid", fusion=fusion)
        walked = any("hnsw.iterative_scan" in q["sql"] for q in queries.captured_queries)
        found[fusion.walk_cost] = ([c.id for c in result.candidates], walked)
    assert found[2.0] == (found[0.0][0], True) and found[0.0][1] is False
    b_scope = knowledge_scope(principal=tenant_b.principal)
    b_ids = {c.id for c in hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=b_scope,
                                            query="deploy kubernetes with helm", mode="hybrid",
                                            fusion=walking).candidates}
    assert b_ids and not b_ids & set(found[2.0][0])
    assert set(KnowledgeItem.objects.filter(id__in=b_ids).values_list("owner_id", flat=True)) == {tenant_b.user.id}


def test_a_walking_vector_list_reads_the_index_whatever_the_planner_guesses(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None, distance_calls: Callable[[], int]
) -> None:
    """The walk is chosen by the scope's own count; the prepared statement's generic plan guesses a project's rows
    from the table's average and, in a small table, preferred sorting every row of the scope. Sorting is priced out
    of a walking statement, so the index gives the order: PostgreSQL computes a distance only for each row the walk
    returns (`candidates`), not for each of tenant A's 121, and never for tenant B's. (The prefilter, which would keep
    the scope exact, is off, as for a scope without one.)"""
    walking = Fusion(exact_rows=1000, exact_floor=50, walk_share=0.99, candidates=40, walk_cost=2.0, prefilter_factor=0)
    scope = knowledge_scope(principal=tenant_a.principal)
    exact = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=scope, query="deploy kubernetes",
                              mode="vector", fusion=replace(walking, walk_cost=0.0))
    before = distance_calls()
    walked = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=scope, query="deploy kubernetes",
                               mode="vector", fusion=walking)
    assert 0 < distance_calls() - before <= walking.candidates
    assert [c.id for c in walked.candidates][:5] == [c.id for c in exact.candidates][:5]
    mine = set(KnowledgeItem.objects.filter(owner=tenant_a.user).values_list("id", flat=True))
    assert {c.id for c in walked.candidates} <= mine
    theirs = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="deploy kubernetes", mode="vector",
                               scope=knowledge_scope(principal=tenant_b.principal), fusion=walking)
    assert theirs.candidates and not {c.id for c in theirs.candidates} & mine


def test_a_walk_inside_a_transaction_puts_its_settings_back(tenant_a: Tenant, tenant_b: Tenant, analysed: None) -> None:
    """Inside an enclosing transaction (brain_retrieve_knowledge runs in one) the walk's local settings would last
    for the rest of it, and a statement planned there would keep a plan made with sorting priced out."""
    walking = Fusion(exact_rows=1000, exact_floor=50, walk_share=0.99, candidates=40, walk_cost=2.0)
    names = ("enable_sort", "plan_cache_mode", "hnsw.ef_search", "hnsw.iterative_scan")

    def current() -> tuple[str, ...]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join("current_setting(%s)" for _ in names), names)
            return tuple(cursor.fetchone())

    before = current()
    with transaction.atomic():
        for tenant in (tenant_a, tenant_b):
            with CaptureQueriesContext(connection) as queries:
                found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="deploy kubernetes",
                                          scope=knowledge_scope(principal=tenant.principal), mode="hybrid",
                                          fusion=walking)
            assert found.candidates and current() == before
        assert any("enable_sort" in q["sql"] for q in queries.captured_queries) is False  # B's 3 rows: exact
    assert before[0] == "on"


def test_a_scope_its_statistics_put_small_is_counted_and_its_count_decides(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None
) -> None:
    """After ANALYZE tenant B grows from 3 rows to 203: its share in the statistics still says 3, so the scope is
    counted, and 203 is most of the 124 rows the statistics know: it walks. Tenant A's scope is unchanged."""
    knowledge_create_many(owner=tenant_b.user, project=tenant_b.project,
                          drafts=[KnowledgeDraft(f"Deploy worker {n} on friday", type="rule") for n in range(200)])
    walks = Fusion(exact_rows=1000, exact_floor=50, walk_share=0.5)
    theirs = _scoped(tenant_b, walks)
    assert not theirs.exact and theirs.rows == 203
    assert _scoped(tenant_b, replace(walks, exact_floor=250)).exact  # 203 rows: not above this floor
    assert _scoped(tenant_a, walks).rows == pytest.approx(121, abs=2)


def _fts_scored(tenant: Tenant, query: str, budget: int) -> dict[str, float]:
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query=query, mode="fts",
                              scope=knowledge_scope(principal=tenant.principal),
                              fusion=Fusion(candidates=200, fts_postings=budget, exact_rows=0))
    return {cand.row["content"]: float(cand.fts_score or 0) for cand in found.candidates}


def test_common_terms_score_but_do_not_generate(tenant_a: Tenant, tenant_b: Tenant, analysed: None) -> None:
    # "deploy" (~123 estimated postings) generates candidates only under a budget that admits it.
    assert len(_fts_scored(tenant_a, "deploy kubernetes", budget=1000)) == 121
    tight = _fts_scored(tenant_a, "deploy kubernetes", budget=10)
    # Only kubernetes rows are candidates, and "deploy" still scores: it adds to the rows holding both.
    assert len(tight) == 4 and all("kubernetes" in text for text in tight)
    alone = _fts_scored(tenant_a, "kubernetes", budget=10)
    assert all(tight[text] > alone[text] for text in tight if "Deploy" in text)
    assert all(tight[text] == pytest.approx(alone[text]) for text in tight if "Deploy" not in text)
    theirs = knowledge_search(principal=tenant_b.principal, query="deploy kubernetes", mode="fts",
                              fusion=Fusion(fts_postings=10, exact_rows=0))
    assert len(theirs.hits) == 3 and all(hit.project_id == tenant_b.project.id for hit in theirs.hits)


def test_a_large_scopes_pool_holds_at_most_the_cap_of_each_kind(tenant_a: Tenant, analysed: None) -> None:
    # 121 rows hold "deploy"; a scope searched through the index keeps `fts_scan_cap` of the rare-term rows and as
    # many whole-query rows (here the same rows), so a pool of 3 ranks at most 6.
    capped = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="deploy", mode="fts",
                               scope=knowledge_scope(principal=tenant_a.principal),
                               fusion=Fusion(candidates=200, fts_postings=1000, exact_rows=0, fts_scan_cap=3))
    assert 3 <= len(capped.candidates) <= 6
    assert len(_fts_scored(tenant_a, "deploy", budget=1000)) > 100  # the default cap (200) holds them all
    assert fusion_from_settings().fts_scan_cap == 200 and event_fusion().fts_scan_cap == FTS_SCAN_CAP == 500


def test_knowledge_search_lists_fewer_postings_than_session_search(tenant_a: Tenant, analysed: None) -> None:
    # The open's search takes a quarter of session search's budget: its pool is smaller (docs/benchmarks.md).
    assert fusion_from_settings().fts_postings == 5000 and event_fusion().fts_postings == FTS_POSTINGS_BUDGET == 20000
    lexemes, stats = ["deploy", "kubernet"], term_stats.term_stats(KNOWLEDGE_TABLE)
    # In a 15,000-row scope with these shares (deploy ~0.98, kubernetes ~0.03), "deploy" fits only the wider budget.
    assert generating_terms(lexemes, stats, event_fusion().fts_postings, 15000) == ["kubernet", "deploy"]
    assert generating_terms(lexemes, stats, fusion_from_settings().fts_postings, 15000) == ["kubernet"]


def test_a_query_of_common_words_still_finds_rows(tenant_a: Tenant, analysed: None) -> None:
    result = knowledge_search(principal=tenant_a.principal, query="deploy", mode="fts", limit=3,
                              fusion=Fusion(fts_postings=10, exact_rows=0))
    assert len(result.hits) == 3 and all("Deploy" in hit.content for hit in result.hits)


@pytest.mark.parametrize("text", [
    "Read O'Reilly's chapter on it''s quoting",
    r"Keep binaries under C:\tools\bin and D:\\cache",
    "Tag rows with foo:bar & baz|qux !negated (grouped) <-> followed",
])
def test_lexemes_with_tsquery_syntax_are_quoted(tenant_a: Tenant, tenant_b: Tenant, text: str) -> None:
    item = knowledge_create_many(owner=tenant_a.user, project=tenant_a.project,
                                 drafts=[KnowledgeDraft(text, type="rule")])[0]
    result = knowledge_search(principal=tenant_a.principal, query=text, mode="fts")
    assert [hit.id for hit in result.hits] == [item.id]
    assert knowledge_search(principal=tenant_b.principal, query=text, mode="fts").hits == []


def _hnsw_setting() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search', true)")
        return str(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_scope_too_large_to_count_walks_the_index_with_its_own_settings(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None
) -> None:
    """The search runs outside any transaction, as on a request: the HNSW settings go with the fusion statement in
    one query string. `ef_search` 60 and iterative scans give the vector list all 60 rows it asks for (the index's
    default 40 would stop at 40), and the settings end with that statement."""
    default = _hnsw_setting()
    with connection.cursor() as cursor:
        # 124 rows: the planner would rather read them all and sort them than walk the graph
        cursor.execute("SET enable_seqscan TO off; SET enable_bitmapscan TO off; SET enable_sort TO off")
    try:
        found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="deploy kubernetes",
                                  mode="vector", scope=knowledge_scope(principal=tenant_a.principal),
                                  fusion=Fusion(candidates=60, exact_rows=0, max_distance=2.0))
        assert _hnsw_setting() == default != "60"
        theirs = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="deploy kubernetes",
                                   mode="hybrid", scope=knowledge_scope(principal=tenant_b.principal),
                                   fusion=Fusion(exact_rows=0))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")
    assert found.retrieval == "vector" and len(found.candidates) == 60
    assert all(c.vec_rank is not None for c in found.candidates)
    assert len(theirs.candidates) == 3 and all("kubernetes" in c.row["content"] for c in theirs.candidates)
    # Both searches ran one prepared statement of this connection; the second saw only its own caller's rows.
    assert {c.id for c in theirs.candidates} <= set(KnowledgeItem.objects.filter(owner=tenant_b.user)
                                                    .values_list("id", flat=True))


def _counts(tenant: Tenant, fusion: Fusion) -> tuple[Scoped, int]:
    with CaptureQueriesContext(connection) as queries:
        scoped = _scoped(tenant, fusion)
    return scoped, sum("count(*)" in q["sql"] for q in queries.captured_queries)


def test_a_scope_counted_above_the_exact_limit_is_not_counted_again_for_a_while(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a scope reads up to the limit's rows (12 ms for a project of 30,000 among 230,000) to learn only that
    it is too large to search exactly: once learnt, the next searches skip it for LARGE_FOR_S. A scope at or under the
    limit is counted every time, since its count is BM25's row count and must follow every write."""
    small_limit = Fusion(exact_rows=100, walk_share=0.0)  # statistics put A at 121 rows: at most 4x, so counted
    first, counted = _counts(tenant_a, small_limit)
    assert counted == 1 and not first.exact and first.rows == pytest.approx(121, abs=2)
    again, counted = _counts(tenant_a, small_limit)
    assert counted == 0 and not again.exact and again.rows == first.rows
    assert _counts(tenant_a, replace(small_limit, exact_rows=1000))[1] == 1  # another limit: its own count
    # Tenant B's scope under the same limit (3 rows) is its own: counted every time, and sees none of A's rows.
    for _ in range(2):
        theirs, counted = _counts(tenant_b, small_limit)
        assert counted == 1 and theirs.exact and theirs.rows == 3
    knowledge_create_many(owner=tenant_b.user, project=tenant_b.project,
                          drafts=[KnowledgeDraft("Deploy the canary first", type="rule")])
    assert _scoped(tenant_b, small_limit).rows == 4  # a write shows in the next count
    monkeypatch.setattr(search_scope, "LARGE_FOR_S", 0.0)
    search_scope.forget_large()
    assert _counts(tenant_a, small_limit)[1] == 1  # forgotten (or expired): counted again
    assert _counts(tenant_a, small_limit)[1] == 1  # and with no time to hold, every time


@pytest.mark.parametrize(("rows", "table_rows", "exact", "read"), [
    # Too large to search exactly: where reading the term matches first won (benchmarks), then where it lost.
    (100_000, 130_000, False, "matches_first"), (100_000, 230_000, False, "matches_first"),
    (100_000, 330_000, False, "planner"), (30_000, 130_000, False, "planner"), (30_000, 230_000, False, "planner"),
    # Searched exactly: where reading the scope's rows first won, then where it lost.
    (300, 210_300, True, "scope_first"), (2_000, 210_300, True, "scope_first"), (8_000, 210_300, True, "planner"),
    (300, 5_000, True, "planner"),
])
def test_the_pool_reads_first_what_holds_fewer_rows_to_visit(rows: int, table_rows: int, exact: bool,
                                                               read: str) -> None:
    scoped = Scoped(TermStats(rows=table_rows), float(rows), exact, ["deploy"])
    assert search_scope.pool_read(scoped, 200) == read
    assert search_scope.pool_read(replace(scoped, stats=TermStats()), 200) == "planner"  # no statistics yet


@pytest.mark.parametrize(("setting", "value", "shape"), [
    ("INDEX_ENTRIES_PER_VISIT", 0, "OFFSET 0) t WHERE ("),  # matches first, then the scope's condition
    ("SCOPE_FIRST_SHARE", 1.0, "OFFSET 0) t WHERE t.search_vector @@"),  # the scope's rows first, then the query
])
def test_a_pool_read_in_either_order_keeps_to_the_scope_and_scores_as_the_planners(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None, monkeypatch: pytest.MonkeyPatch, setting: str, value: float,
    shape: str,
) -> None:
    """Tenant B's three kubernetes rules match the query as well as tenant A's: read in either order, the pool must
    still drop them, and score A's rows as the planner's read does."""
    monkeypatch.setattr(search_scope, "INDEX_ENTRIES_PER_VISIT", 10**9)
    monkeypatch.setattr(search_scope, "SCOPE_FIRST_SHARE", 0.0)
    exact = Fusion(candidates=200, fts_postings=1000)  # A's 121 rows: under EXACT_ROWS
    planners = _fts_scored(tenant_a, "deploy kubernetes helm", 1000), _fts_scored_with(tenant_a, exact)
    monkeypatch.setattr(search_scope, setting, value)
    with CaptureQueriesContext(connection) as queries:
        ordered = _fts_scored(tenant_a, "deploy kubernetes helm", 1000), _fts_scored_with(tenant_a, exact)
    assert any(shape in q["sql"] for q in queries.captured_queries)
    for mine, planner in zip(ordered, planners, strict=True):
        assert mine == pytest.approx(planner) and len(mine) == 121
        assert set(mine) <= set(KnowledgeItem.objects.filter(owner=tenant_a.user).values_list("content", flat=True))
    theirs = _fts_scored(tenant_b, "deploy kubernetes helm", 1000)
    assert set(theirs) == {f"Deploy to kubernetes with helm chart version {n}" for n in range(3)}


def _fts_statements(tenant: Tenant, queries: list[str], fusion: Fusion) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        for query in queries:
            hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query=query, mode="fts",
                              scope=knowledge_scope(principal=tenant.principal), fusion=fusion)
    return [q["sql"] for q in captured.captured_queries if "fts_pool" in q["sql"] or "brain_fts_" in q["sql"]]


def test_a_pool_read_term_matches_first_is_planned_once_per_connection(
    tenant_a: Tenant, tenant_b: Tenant, analysed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the term matches first fixes the plan in the SQL: the full-text statement is prepared once per
    connection and runs on its generic plan, its caps written in. A scope read first is planned with its values
    every time (its generic plan does not know how small the scope is)."""
    monkeypatch.setattr(search_scope, "INDEX_ENTRIES_PER_VISIT", 0)  # matches first
    fusion = Fusion(candidates=37, fts_postings=1000, exact_rows=0, fts_scan_cap=173)  # a statement of its own
    sent = _fts_statements(tenant_a, ["deploy kubernetes", "rolling restart of pods"], fusion)
    prepared = [sql for sql in sent if sql.startswith("PREPARE brain_fts_")]
    assert len(prepared) == 1 and "LIMIT 173" in prepared[0] and "LIMIT 37" in prepared[0]
    name = prepared[0].split()[1]
    run = [sql for sql in sent if f"EXECUTE {name}(" in sql]
    assert len(run) == 2 and all("force_generic_plan" in sql for sql in run)
    assert _fts_statements(tenant_a, ["deploy kubernetes"], fusion) == run[:1]  # prepared already: run alone
    (theirs,) = _fts_statements(tenant_b, ["deploy kubernetes"], fusion)  # another scope's values, the same plan
    assert theirs.startswith(f"SELECT set_config('plan_cache_mode', 'force_generic_plan', true); EXECUTE {name}(")
    monkeypatch.setattr(search_scope, "INDEX_ENTRIES_PER_VISIT", 10**9)
    monkeypatch.setattr(search_scope, "SCOPE_FIRST_SHARE", 1.0)  # the scope's rows first
    (planned,) = _fts_statements(tenant_a, ["deploy kubernetes"], replace(fusion, exact_rows=10_000))
    assert planned.lstrip().startswith("WITH") and "OFFSET 0) t WHERE t.search_vector @@" in planned


def _fts_scored_with(tenant: Tenant, fusion: Fusion) -> dict[str, float]:
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="deploy kubernetes helm", mode="fts",
                              scope=knowledge_scope(principal=tenant.principal), fusion=fusion)
    return {cand.row["content"]: float(cand.fts_score or 0) for cand in found.candidates}
