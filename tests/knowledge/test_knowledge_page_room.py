"""A session's close credits the rows it used with an UPDATE of their counters and confidence, none of them an
indexed column: with room on the row's page (the table's fillfactor) PostgreSQL keeps the new version on the
same page and touches no index (a HOT update), the HNSW graph and the full-text GIN included."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from knowledge.models import KnowledgeItem
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, call_tool

pytestmark = pytest.mark.django_db(transaction=True)
BODY = "Run the database migrations in a separate deploy step before the web workers restart. " * 4


def _page_of(pk: Any) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT (ctid::text::point)[0]::int FROM knowledge_knowledgeitem WHERE id = %s", [pk])
        return int(cursor.fetchone()[0])


def _vector(seed: int) -> list[float]:
    """A vector of real size that does not compress, as real ones (PostgreSQL may move it out of the row)."""
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(384)]


def _rows(tenant: Tenant, count: int) -> list[KnowledgeItem]:
    rows = [KnowledgeItem(owner=tenant.user, project=tenant.project, content=f"{n}: {BODY}", trigger="deploys",
                          embedding=_vector(n), embedding_model="test") for n in range(count)]
    return KnowledgeItem.objects.bulk_create(rows)


def test_credit_on_a_full_table_updates_the_row_in_place(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _rows(tenant_a, 60)
    theirs = _rows(tenant_b, 2)
    pages = [_page_of(r.pk) for r in rows]
    assert len(set(pages)) > 2, pages  # the inserts filled pages (as far as the fillfactor lets them) and went on
    target = rows[0]  # on the first page, filled before the second was started
    page_before = _page_of(target.pk)
    mcp = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp, "brain_start_session", {"clientType": "t"})["structuredContent"]["sessionId"]
    closed = call_tool(mcp, "brain_report_session_outcome", {"sessionId": sid, "success": True,
                                                             "knowledgeUsed": [str(target.pk)]})
    assert not closed.get("isError"), closed
    target.refresh_from_db()
    assert target.success_count == 1  # credited
    assert _page_of(target.pk) == page_before  # the new version stayed on its page: no index was touched
    assert all(KnowledgeItem.objects.get(pk=r.pk).success_count == 0 for r in theirs)
