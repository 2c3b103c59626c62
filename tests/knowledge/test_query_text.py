"""How a prompt's text reaches PostgreSQL's full-text parser: a hyphen that does not join two words is a separator,
not a NOT, so bullets, flags and Markdown tables neither exclude rows nor fail the search; and a full-text statement
PostgreSQL refuses all the same leaves the vector list to rank."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection

from knowledge import search
from knowledge.models import TS_CONFIG, KnowledgeItem
from knowledge.search_scope import fts_query_text
from knowledge.selectors.search import knowledge_search
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from sessions.services.open import session_open
from tests.conftest import Tenant

MIGRATIONS = "Run database migrations inside a transaction and keep them reversible"
# A Markdown table as agents paste them: its rule row stacked more NOTs than PostgreSQL's parser holds.
TABLE_PROMPT = ("| Step | Action |\n|------|---------------------------------------------|\n"
                "| 1 | run the database migrations inside a transaction |")


@pytest.fixture
def rules(tenant_a: Tenant, tenant_b: Tenant) -> dict[str, list[KnowledgeItem]]:
    drafts = [KnowledgeDraft(MIGRATIONS, type="rule"),
              KnowledgeDraft("Follow the security checklist before every Tauri release", type="rule"),
              KnowledgeDraft("Never git push --force to a shared branch; use --force-with-lease", type="rule")]
    return {"a": knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=drafts),
            "b": knowledge_create_many(owner=tenant_b.user, project=tenant_b.project, drafts=drafts)}


@pytest.mark.parametrize(("text", "expected"), [
    ("- Follow the checklist", "  Follow the checklist"),
    ("git push --force origin", "git push  force origin"),
    ("|---|---|", "| | |"),
    ("--- description: rules", "  description: rules"),
    ("a -> b", "a  > b"),
    ("real-time 1e-6 hard-coded", "real-time 1e-6 hard-coded"),
    ('"exact phrase" or other', '"exact phrase" or other'),
])
def test_loose_hyphens_become_spaces(text: str, expected: str) -> None:
    assert fts_query_text(text) == expected


def _whole_query_matches(tenant: Tenant, prompt: str) -> list[str]:
    """The tenant's rows the search's whole-query tsquery matches for `prompt`."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT content FROM knowledge_knowledgeitem WHERE owner_id = %s "
                       f"AND search_vector @@ websearch_to_tsquery('{TS_CONFIG}', %s) ORDER BY content",
                       [tenant.user.id, fts_query_text(prompt)])
        return [row[0] for row in cursor.fetchall()]


def test_a_bullet_or_a_flag_does_not_exclude_the_rows_that_hold_its_word(
        tenant_a: Tenant, tenant_b: Tenant, rules: dict[str, list[KnowledgeItem]]) -> None:
    # Read as a web search, "- Follow" is NOT follow and "--force" is NOT force: each prompt matched nothing.
    assert _whole_query_matches(tenant_a, "- Follow the security checklist") == [rules["a"][1].content]
    assert _whole_query_matches(tenant_a, "git push --force shared branch") == [rules["a"][2].content]
    assert _whole_query_matches(tenant_b, "- Follow the security checklist") == [rules["b"][1].content]


def test_a_markdown_table_in_the_query_is_searched(tenant_a: Tenant, rules: dict[str, list[KnowledgeItem]]) -> None:
    for mode in ("hybrid", "fts"):
        hits = knowledge_search(principal=tenant_a.principal, query=TABLE_PROMPT, mode=mode).hits
        assert hits[0].id == rules["a"][0].id
        assert not {hit.id for hit in hits} & {item.id for item in rules["b"]}


def test_an_open_with_a_table_in_its_prompt_injects(tenant_a: Tenant, rules: dict[str, list[KnowledgeItem]]) -> None:
    # The parser's error used to fail the open's search, which then injected nothing at all.
    opened = session_open(principal=tenant_a.principal, prompt=TABLE_PROMPT)
    assert opened.relevant_knowledge is not None
    assert str(rules["a"][0].id) in opened.relevant_knowledge.ids
    assert not set(opened.relevant_knowledge.ids) & {str(item.id) for item in rules["b"]}


def test_a_full_text_statement_postgresql_refuses_leaves_the_vectors_to_rank(
        tenant_a: Tenant, rules: dict[str, list[KnowledgeItem]], monkeypatch: pytest.MonkeyPatch) -> None:
    # The query text as it reached PostgreSQL before the hyphens were read as spaces: its parser fails on the table.
    monkeypatch.setattr(search, "fts_query_text", lambda query: query)
    found = knowledge_search(principal=tenant_a.principal, query=TABLE_PROMPT)
    assert found.retrieval == "vector_only"
    assert "Full-text search failed (tsquery stack too small)" in found.notice
    assert found.hits[0].id == rules["a"][0].id
    assert not {hit.id for hit in found.hits} & {item.id for item in rules["b"]}
    # The failure was kept to its savepoint: the test's own transaction goes on, and so do the next searches.
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 3
    again = knowledge_search(principal=tenant_a.principal, query="run database migrations in a transaction")
    assert again.retrieval == "hybrid" and again.hits[0].id == rules["a"][0].id
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "auto"  # the failed statement's local setting went with its savepoint
    with pytest.raises(DatabaseError):  # a full-text search asked for by name still says it failed
        knowledge_search(principal=tenant_a.principal, query=TABLE_PROMPT, mode="fts")
