"""The full-text and tag indexes keep no pending list: a write puts its entries into the GIN index itself, so no
search has to read the entries written since the last vacuum (knowledge/migrations/0018_gin_fastupdate_off.py).
Writes go through the product's own services for two tenants; each tenant's search finds its own new rows and
never the other's."""

from __future__ import annotations

import pytest
from django.db import connection

from brain.bench.scale import GIN_INDEX, declared_index_sql, gin_pending
from knowledge.selectors.search import knowledge_search
from knowledge.services.teach import knowledge_teach
from sessions.selectors.search import session_search
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

SEARCHED = ("knowledge_search_gin", "knowledge_tags_gin", "event_search_gin")


def _gin_indexes() -> dict[str, list[str]]:
    """Every GIN index of the schema, with its storage options."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname, coalesce(c.reloptions, '{}') FROM pg_index x "
                       "JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam "
                       "WHERE a.amname = 'gin' AND c.relnamespace = current_schema()::regnamespace")
        return {name: list(options) for name, options in cursor.fetchall()}


def _pending_tuples(index: str) -> int | None:
    with connection.cursor() as cursor:  # the extension it creates is rolled back with the test
        return gin_pending(cursor, index)


def test_every_gin_index_writes_into_the_index() -> None:
    indexes = _gin_indexes()
    assert set(SEARCHED) <= set(indexes)
    assert {name: options for name, options in indexes.items() if "fastupdate=off" not in options} == {}


def test_the_bench_builds_the_index_the_model_declares() -> None:
    assert declared_index_sql(GIN_INDEX).endswith("WITH (fastupdate = off)")


def test_writes_leave_no_pending_entries_and_each_tenant_finds_only_its_own(tenant_a: Tenant,
                                                                         tenant_b: Tenant) -> None:
    for tenant, word in ((tenant_a, "zeppelin"), (tenant_b, "quokka")):
        knowledge_teach(principal=tenant.principal, rule=f"Name the {word} fixtures after their module",
                        tags=[word])
        session = session_start(user=tenant.user, project=tenant.project, prompt=f"tidy the {word} fixtures")
        session_events_log_many(session=session, drafts=[EventDraft("note", f"renamed the {word} fixtures", {})])
    assert {index: _pending_tuples(index) for index in SEARCHED} == dict.fromkeys(SEARCHED, 0)
    for tenant, own, other in ((tenant_a, "zeppelin", "quokka"), (tenant_b, "quokka", "zeppelin")):
        rules = [hit.content for hit in knowledge_search(principal=tenant.principal, query=f"{own} {other} fixtures",
                                                         mode="fts").hits]
        assert rules == [f"Name the {own} fixtures after their module"]
        events = session_search(principal=tenant.principal, query=f"{own} {other}").events
        assert events and all(own in event.snippet and other not in event.snippet for event in events)
