"""A rule taught a moment before an open: its vector is still with the batcher, and the open must inject it anyway.

Knowledge commits without its vector (the batcher embeds it after the commit). In these tests nothing commits, so
the batcher never gets the rows: they stay exactly as a rule taught a few milliseconds before the open is."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import connection

from knowledge.models import KnowledgeItem
from knowledge.services.teach import knowledge_teach
from sessions.services.open import session_open
from sessions.services.retrieve import knowledge_retrieve
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
PROMPT = "add a pydantic validator for the signup form"


@pytest.fixture(autouse=True)
def _batched_vectors(settings: Any) -> None:
    settings.BRAIN_KNOWLEDGE_VECTORS = "batched"


def _teach(tenant: Tenant, *, trigger: str = "writing pydantic validators",
           rule: str = "use field_validator with mode='after'") -> KnowledgeItem:
    taught = knowledge_teach(principal=tenant.principal, project_id=str(tenant.project.id), type="reflex",
                             trigger=trigger, rule=rule)
    return taught.item


def _embedded(item: KnowledgeItem) -> bool:
    return KnowledgeItem.objects.filter(id=item.id, embedding__isnull=False).exists()


def test_a_rule_taught_just_before_the_open_is_injected(tenant_a: Tenant, tenant_b: Tenant,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    mine, theirs = _teach(tenant_a), _teach(tenant_b)
    unrelated = _teach(tenant_a, trigger="deploying with docker compose", rule="run migrations in a one-off container")
    assert not any(map(_embedded, (mine, theirs, unrelated)))  # as the batcher would find them

    with caplog.at_level(logging.INFO):
        opened = session_open(principal=tenant_a.principal, prompt=PROMPT)

    assert opened.relevant_knowledge is not None, opened.injection_notice
    assert opened.relevant_knowledge.ids == [str(mine.id)]
    assert "field_validator" in opened.relevant_knowledge.text
    assert _embedded(mine)  # stored: the batcher finds nothing left to do for it
    assert not _embedded(unrelated)  # only the hits the open needed were embedded now
    assert not _embedded(theirs)  # the other tenant's row was neither read nor embedded
    assert "op=retrieval.vectors_caught_up" in caplog.text

    # The other tenant's own open injects its own rule, never the first tenant's.
    other = session_open(principal=tenant_b.principal, prompt=PROMPT)
    assert other.relevant_knowledge is not None and other.relevant_knowledge.ids == [str(theirs.id)]


def test_brain_retrieve_knowledge_injects_a_fresh_rule_too(tenant_a: Tenant, tenant_b: Tenant) -> None:
    mine = _teach(tenant_a)
    _teach(tenant_b)
    retrieved = knowledge_retrieve(principal=tenant_a.principal, prompt=PROMPT)
    assert retrieved.injection.ids == [str(mine.id)], retrieved.injection.notice


def test_an_embedded_rule_is_not_embedded_again(tenant_a: Tenant, tenant_b: Tenant, settings: Any,
                                                caplog: pytest.LogCaptureFixture) -> None:
    settings.BRAIN_KNOWLEDGE_VECTORS = "inline"
    mine = _teach(tenant_a)
    stored = KnowledgeItem.objects.values_list("embedding", flat=True).get(id=mine.id)
    with caplog.at_level(logging.INFO):
        opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert opened.relevant_knowledge is not None and opened.relevant_knowledge.ids == [str(mine.id)]
    assert "vectors_caught_up" not in caplog.text  # one search, as before
    assert list(KnowledgeItem.objects.values_list("embedding", flat=True).get(id=mine.id)) == list(stored)
    assert session_open(principal=tenant_b.principal, prompt=PROMPT).relevant_knowledge is None


def test_a_failed_store_leaves_the_rule_to_the_batcher_and_the_search_as_found(
        tenant_a: Tenant, tenant_b: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    mine, theirs = _teach(tenant_a), _teach(tenant_b)
    with connection.cursor() as cursor:  # the database refuses to store any knowledge vector (dropped with the test)
        cursor.execute("CREATE FUNCTION refuse_vectors() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                       "RAISE EXCEPTION 'vectors refused'; END $$")
        cursor.execute("CREATE TRIGGER refuse_vectors BEFORE UPDATE OF embedding ON knowledge_knowledgeitem "
                       "FOR EACH ROW EXECUTE FUNCTION refuse_vectors()")
    with caplog.at_level(logging.INFO):
        retrieved = knowledge_retrieve(principal=tenant_a.principal, prompt=PROMPT)  # inside its own transaction
    assert retrieved.injection.ids == [] and "relevance floor" in retrieved.injection.notice
    assert "vectors refused" in caplog.text and "vectors_caught_up" not in caplog.text
    assert not _embedded(mine) and not _embedded(theirs)  # the transaction goes on: this read would fail otherwise
