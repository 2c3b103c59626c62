"""An exact vector list picks its candidates by the signs of the rows' vectors, read from `knowledge_vector_scope`
alone, and computes the true distance of those candidates only; the hits stay the exact list's, and nobody else's
rows are ever among the candidates. Work is counted by PostgreSQL (`track_functions`), not timed."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Callable
from dataclasses import replace

from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import KnowledgeItem
from knowledge.search import Fusion, hybrid_candidates
from knowledge.selectors.search import KNOWLEDGE_TABLE, fusion_from_settings, knowledge_scope, knowledge_search
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from tests.conftest import Tenant
from tests.knowledge.test_vector_list_reads import DRAFTS

# The nine rules of the exact list's own test, and seven more.
RULES = (
    *(draft.content for draft in DRAFTS),
    "Cache compiled templates in memory and clear the cache on deploy",
    "Index every foreign key column that a query filters on",
    "Return a problem-details JSON body for every API error",
    "Run the linter and the type checker before every commit",
    "Store secrets in the vault, never in the repository",
    "Retry idempotent HTTP calls with exponential backoff and jitter",
    "Render dates in the user's time zone and store them in UTC",
)
QUERIES = ("blue green deploy script", "database migration rollback", "pytest fixture setup",
           "secrets in git", "retry network calls", "time zones for timestamps")
# Four candidates per query from the index: a quarter of the sixteen rows of the scope.
NARROW = replace(fusion_from_settings(), candidates=4, prefilter_factor=1)


def _rules(tenant: Tenant, *, personal: bool = False) -> list[KnowledgeItem]:
    return knowledge_create_many(owner=tenant.user, project=None if personal else tenant.project,
                                 drafts=[KnowledgeDraft(rule) for rule in RULES])


def _vector_ids(tenant: Tenant, query: str, fusion: Fusion) -> list[object]:
    scope = knowledge_scope(principal=tenant.principal, project=tenant.project)
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=scope, query=query, mode="vector",
                              fusion=fusion)
    return [c.id for c in sorted(found.candidates, key=lambda c: c.vec_rank or 0)]


def test_the_prefiltered_list_finds_the_exact_lists_nearest(tenant_a: Tenant, tenant_b: Tenant,
                                                            distance_calls: Callable[[], int]) -> None:
    mine = {item.id for item in _rules(tenant_a)}
    theirs = {item.id for item in _rules(tenant_b)}
    every_row = replace(NARROW, prefilter_factor=0, walk_cost=0.0)
    for query in QUERIES:
        before = distance_calls()
        picked = _vector_ids(tenant_a, query, NARROW)
        computed = distance_calls() - before
        exact = _vector_ids(tenant_a, query, every_row)
        # True distances for the four rows the signs chose, not for all sixteen, and the nearest row is the exact
        # list's. Tenant B's sixteen identical rows took none of the four places.
        assert computed == NARROW.candidates, query
        assert picked[0] == exact[0] and set(picked) <= mine and not set(picked) & theirs, query
    before = distance_calls()
    _vector_ids(tenant_a, QUERIES[0], every_row)
    assert distance_calls() - before == len(mine)


def test_the_first_pass_reads_the_index_alone(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """The prefilter's conditions imply the index's predicate and read only its columns, so its scan needs nothing
    but the index: with the table's other plain indexes dropped (in this test's transaction; the tiny table would
    otherwise be read through any of them), the plan is an index-only scan."""
    _rules(tenant_a)
    _rules(tenant_b)
    with CaptureQueriesContext(connection) as queries:
        _vector_ids(tenant_a, QUERIES[1], NARROW)
    statement = next(q["sql"] for q in queries.captured_queries if "embedding_bits <~>" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE "
                       "i.indrelid = %s::regclass AND NOT i.indisunique AND c.relname <> 'knowledge_vector_scope'",
                       [KNOWLEDGE_TABLE])
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET LOCAL enable_seqscan = off")  # likewise
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Only Scan using knowledge_vector_scope" in plan, plan


def test_a_narrowed_scope_reads_every_row(tenant_a: Tenant, distance_calls: Callable[[], int]) -> None:
    mine = _rules(tenant_a)
    scope = knowledge_scope(principal=tenant_a.principal, project=tenant_a.project)
    assert scope.prefilter and not scope.narrowed("t.type = 'rule'").prefilter
    before = distance_calls()
    found = knowledge_search(principal=tenant_a.principal, query=QUERIES[0], mode="vector", limit=3,
                             types=["rule"], fusion=NARROW)
    assert distance_calls() - before == len(mine) and found.hits


def test_the_callers_own_project_less_rows_are_candidates_and_nobody_elses(
    tenant_a: Tenant, tenant_b: Tenant, distance_calls: Callable[[], int]
) -> None:
    personal = {item.id for item in _rules(tenant_a, personal=True)}
    theirs = {item.id for item in _rules(tenant_b, personal=True)}
    scope = knowledge_scope(principal=tenant_a.principal, project=tenant_a.project)
    assert len(scope.prefilter) == 2  # the visible projects' rows, and the caller's own project-less rows
    before = distance_calls()
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=scope, query=QUERIES[4],
                              mode="vector", fusion=NARROW)
    ids = {c.id for c in found.candidates}
    assert distance_calls() - before == NARROW.candidates
    assert ids and ids <= personal and not ids & theirs


def test_the_bits_follow_the_vector(tenant_a: Tenant, tenant_b: Tenant) -> None:
    item = _rules(tenant_a)[0]
    other = _rules(tenant_b)[0]

    def bits(pk: uuid.UUID) -> tuple[str | None, str | None]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT embedding_bits::text, binary_quantize(embedding)::text FROM knowledge_knowledgeitem "
                           "WHERE id = %s", [pk])
            stored, computed = cursor.fetchone()
        return stored, computed

    stored, computed = bits(item.id)
    assert stored is not None and stored == computed and len(stored) == 384
    vector = KnowledgeItem.objects.values_list("embedding", flat=True).get(pk=item.id)
    assert vector is not None
    flipped = [-x for x in vector]
    KnowledgeItem.objects.filter(pk=item.id).update(embedding=flipped)
    after, computed = bits(item.id)
    assert after == computed and after != stored
    KnowledgeItem.objects.filter(pk=item.id).update(embedding=None)
    assert bits(item.id) == (None, None)
    theirs, computed = bits(other.id)
    assert theirs is not None and theirs == computed  # tenant B's row untouched


def test_the_migration_names_the_pgvector_it_needs() -> None:
    refusal = importlib.import_module("knowledge.migrations.0019_vector_scope").pgvector_refusal
    assert refusal("0.8.1") == refusal("0.7.0") == refusal("1.0") == ""
    assert "needs pgvector 0.7 or newer" in refusal("0.6.2") and "ALTER EXTENSION vector UPDATE" in refusal("0.5.1")
    assert refusal("devel") == ""  # a version that does not parse is left to PostgreSQL
