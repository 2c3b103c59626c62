"""A handshake-era tool call updates its MCP session row (call count, last seen) as a HOT update: no index holds
those columns, so the call writes one row version on the row's own page and no index entry (mcpgw 0002)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from mcpgw.models import McpSession
from tests.mcpgw.conftest import Mcp, call_tool

pytestmark = pytest.mark.django_db  # one transaction: the xact statistics count this test's updates only
CALLS = 10


def _updates() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s",
                       [McpSession._meta.db_table])
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (0, 0)


def test_every_tool_call_updates_its_session_without_touching_an_index(mcp_a: Mcp, tenant_b: Any) -> None:
    session = mcp_a.initialize()
    before = _updates()
    for _ in range(CALLS):
        names = [p["name"] for p in call_tool(mcp_a, "brain_list_projects", session=session)["structuredContent"][
            "projects"]]
        assert tenant_b.project.name not in names
    updated, hot = (after - start for after, start in zip(_updates(), before, strict=True))
    assert updated == CALLS and hot == CALLS
    assert McpSession.objects.get(pk=session).tool_call_count == CALLS
    assert not McpSession.objects.filter(token__user=tenant_b.user).exists()


def test_no_index_of_the_session_table_holds_what_a_call_updates() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s", [McpSession._meta.db_table])
        definitions = [row[0] for row in cursor.fetchall()]
    assert definitions and not [d for d in definitions if "last_seen_at" in d or "tool_call_count" in d]
