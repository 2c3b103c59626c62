"""What an exact vector list costs PostgreSQL: one cosine distance per row of the caller's scope, none for anybody
else's rows. Counted by PostgreSQL itself (`track_functions`), so the test measures work, not time."""

from __future__ import annotations

from collections.abc import Callable

from knowledge.selectors.search import knowledge_search
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from tests.conftest import Tenant

DRAFTS = [KnowledgeDraft(text) for text in (
    "Deploy with the blue green script and watch the error rate for ten minutes",
    "Run database migrations inside a transaction and keep them reversible",
    "Prefer pytest fixtures over setUp methods in Python tests",
    "Pin every dependency in constraints.txt and upgrade them in one reviewed change",
    "Use react-hook-form with zod schemas for every form",
    "Log one structured line per request with its duration and outcome",
    "Rotate API tokens every ninety days and revoke the old ones at once",
    "Keep each service's configuration in environment variables, never in the image",
    "Write the changelog entry in the same pull request as the change",
)]


def test_an_exact_vector_list_computes_each_scoped_distance_once(tenant_a: Tenant, tenant_b: Tenant,
                                                                 distance_calls: Callable[[], int]) -> None:
    mine = knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=DRAFTS)
    theirs = knowledge_create_many(owner=tenant_b.user, project=tenant_b.project, drafts=DRAFTS)
    before = distance_calls()
    found = knowledge_search(principal=tenant_a.principal, query="blue green deploy script", mode="vector", limit=20)
    # Nine rows in the scope (searched exactly: far below EXACT_FLOOR), nine distances: the other tenant's nine
    # identical rows are filtered out before any distance is computed, and no row's distance is computed twice.
    assert distance_calls() - before == len(mine)
    assert found.retrieval == "vector"
    assert found.hits and {hit.id for hit in found.hits} <= {item.id for item in mine}
    assert not {hit.id for hit in found.hits} & {item.id for item in theirs}
