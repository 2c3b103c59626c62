"""The handshake era binds the Cognibrain current session to the MCP session: one agent session per
Mcp-Session-Id, closed when the MCP session is DELETEd (completed) or expires (abandoned)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from mcpgw.models import McpSession
from mcpgw.services import mcp_sessions_sweep
from sessions.models import Session
from tests.conftest import Tenant
from tests.mcpgw.conftest import Cog, call_tool

pytestmark = pytest.mark.django_db


def guard(cog: Cog, session: str | None = None) -> None:
    result = call_tool(cog, "cognibrain_guard", {"action": "ls -la"}, session=session)
    assert result["isError"] is False, result


def agent(mcp_session: str) -> Session:
    return Session.objects.get(binding=McpSession.objects.get(pk=mcp_session).binding)


def test_each_mcp_session_gets_its_own_agent_session(cog_a: Cog, cog_b: Cog, tenant_a: Tenant) -> None:
    first, second = cog_a.initialize(), cog_a.initialize()
    guard(cog_a, first)
    guard(cog_a, first)
    guard(cog_a, second)
    guard(cog_a)  # stateless era: the unbound current session
    mine = Session.objects.filter(user=tenant_a.user, client_type="cognibrain")
    assert mine.count() == 3 and mine.filter(binding="").count() == 1
    assert agent(first) != agent(second) and agent(first).project == agent(second).project
    assert first not in {s.binding for s in mine}  # the secret id itself is stored nowhere else
    ended = call_tool(cog_a, "cognibrain_session_end", {}, session=second)["structuredContent"]
    assert ended["sessionId"] == str(agent(second).id) and ended["closed"] is True
    assert agent(first).ended_at is None and mine.get(binding="").ended_at is None
    theirs = cog_b.initialize()
    guard(cog_b, theirs)
    assert agent(theirs).user != tenant_a.user
    assert call_tool(cog_b, "cognibrain_session_end", {}, session=theirs)["structuredContent"]["closed"] is True
    assert agent(first).ended_at is None  # tenant B ends only its own


def test_delete_closes_the_bound_session_as_completed(cog_a: Cog, cog_b: Cog) -> None:
    mine, theirs = cog_a.initialize(), cog_b.initialize()
    guard(cog_a, mine)
    guard(cog_b, theirs)
    guard(cog_a)
    assert cog_b.delete(mine).status_code == 401  # another tenant's token cannot end it
    assert agent(mine).ended_at is None
    assert cog_a.delete(mine).status_code == 200
    closed = agent(mine)
    assert closed.ended_at is not None and closed.success is True and closed.quality_score is not None
    assert closed.outcome and closed.outcome["report"]["summary"].startswith("completed: its MCP session")
    assert agent(theirs).ended_at is None
    assert Session.objects.get(binding="").ended_at is None
    guard(cog_a, cog_a.initialize())  # a fresh MCP session starts a fresh agent session
    assert Session.objects.filter(client_type="cognibrain", ended_at__isnull=True).count() == 3


def test_expiry_closes_the_bound_session_as_abandoned(cog_a: Cog, cog_b: Cog) -> None:
    stale, fresh = cog_a.initialize(), cog_b.initialize()
    guard(cog_a, stale)
    guard(cog_b, fresh)
    McpSession.objects.filter(pk=stale).update(last_seen_at=timezone.now() - timedelta(hours=25))
    assert mcp_sessions_sweep() == 1
    gone = agent(stale)
    assert gone.ended_at is not None and gone.success is False
    assert gone.outcome and gone.outcome["report"]["summary"] == "abandoned: its MCP session expired (idle)"
    assert agent(fresh).ended_at is None


def test_an_mcp_session_without_cognibrain_calls_closes_nothing(cog_a: Cog) -> None:
    guard(cog_a)
    quiet = cog_a.initialize()
    assert cog_a.delete(quiet).status_code == 200
    assert Session.objects.get(client_type="cognibrain").ended_at is None


def test_a_session_a_late_call_opened_after_delete_is_ended_by_the_sweep(cog_a: Cog, cog_b: Cog,
                                                                          tenant_a: Tenant) -> None:
    from mcpgw.tasks import sweep_idle_sessions
    from projects.scope import Principal
    from sessions.services.current import session_current

    deleted, theirs = cog_a.initialize(), cog_b.initialize()
    guard(cog_b, theirs)
    binding = McpSession.objects.get(pk=deleted).binding
    assert cog_a.delete(deleted).status_code == 200
    # A call that passed its session check before the DELETE reaches the current session only now.
    late = session_current(principal=Principal(user=tenant_a.user, token=tenant_a.user_token, binding=binding))
    assert late.ended_at is None

    assert sweep_idle_sessions.apply().get() == 0  # no MCP session was idle; the late agent session is ended
    late.refresh_from_db()
    assert late.ended_at is not None and late.success is True
    assert late.outcome and late.outcome["report"]["summary"].startswith("completed: its MCP session")
    assert agent(theirs).ended_at is None  # the other tenant's open MCP session keeps its agent session
    assert McpSession.objects.get(pk=theirs).closed_at is None
