"""Token and session matrix: two users, user- and project-scoped tokens, revocation, sweep and cap."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from mcpgw import protocol as p
from mcpgw.models import McpSession
from mcpgw.services import mcp_sessions_purge, mcp_sessions_sweep
from mcpgw.tasks import sweep_idle_sessions
from projects.models import ApiToken
from projects.services.accounts import token_revoke
from tests.mcpgw.conftest import Mcp, call_tool, ops


@pytest.mark.parametrize("other", ["a_project", "b_user", "b_project"])
def test_session_rejects_any_other_valid_token(client: Client, tenant_a, tenant_b, caplog, other: str) -> None:
    session = Mcp(client, tenant_a.user_raw).initialize()
    raw = {"a_project": tenant_a.project_raw, "b_user": tenant_b.user_raw, "b_project": tenant_b.project_raw}[other]
    response = Mcp(client, raw).legacy(session, "tools/list")
    assert response.status_code == 401
    assert response.json()["error"] == {"code": -32001, "message": "Session-token mismatch"}
    assert ops(caplog, "mcp.session.token_mismatch") == [
        {"op": "mcp.session.token_mismatch", "sessionPrefix": session[:8]}]
    deleted = client.delete("/mcp", headers=Mcp(client, raw).headers({p.SESSION_HEADER: session}))
    assert deleted.status_code == 401 and McpSession.objects.get(pk=session).closed_at is None


def test_logs_never_carry_a_whole_session_id(mcp_a: Mcp, caplog) -> None:
    session = mcp_a.initialize()
    call_tool(mcp_a, "brain_list_projects", session=session)
    mcp_a.client.delete("/mcp", headers=mcp_a.headers({p.SESSION_HEADER: session}))
    assert session not in caplog.text and f"sessionPrefix={session[:8]}" in caplog.text
    assert [r.op_fields["op"] for r in caplog.records if hasattr(r, "op_fields")] == [
        "mcp.session.open", "mcp.tool", "mcp.session.close"]


def test_revoked_token_fails_inside_its_open_session(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    assert mcp_a.legacy(session, "ping").status_code == 200
    token_revoke(user=tenant_a.user, token_id=tenant_a.user_token.pk)
    assert mcp_a.legacy(session, "ping").status_code == 401
    assert mcp_a.modern("tools/list").status_code == 401


def test_expired_token_fails_on_next_request(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    ApiToken.objects.filter(pk=tenant_a.user_token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert mcp_a.legacy(session, "ping").status_code == 401


def test_last_used_at_is_written_at_most_once_a_minute(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    first = ApiToken.objects.get(pk=tenant_a.user_token.pk).last_used_at
    assert first is not None
    for _ in range(3):
        mcp_a.legacy(session, "ping")
    assert ApiToken.objects.get(pk=tenant_a.user_token.pk).last_used_at == first
    ApiToken.objects.filter(pk=tenant_a.user_token.pk).update(last_used_at=first - timedelta(minutes=2))
    mcp_a.legacy(session, "ping")
    assert ApiToken.objects.get(pk=tenant_a.user_token.pk).last_used_at > first


def test_tool_calls_are_counted_per_session(mcp_a: Mcp) -> None:
    session = mcp_a.initialize()
    for _ in range(2):
        call_tool(mcp_a, "brain_list_projects", session=session)
    mcp_a.legacy(session, "tools/list")
    assert McpSession.objects.get(pk=session).tool_call_count == 2


def test_sweep_evicts_orphans_after_30_minutes_and_working_sessions_only_after_a_day_idle(
        client: Client, tenant_a, tenant_b, caplog) -> None:
    a, b = Mcp(client, tenant_a.user_raw), Mcp(client, tenant_b.user_raw)
    worked, lunch, fresh = a.initialize(), a.initialize(), a.initialize()
    orphan, pinged = b.initialize(), b.initialize()
    for session in (worked, lunch):
        call_tool(a, "brain_list_projects", session=session)
    now = timezone.now()
    McpSession.objects.filter(pk__in=[worked, lunch, orphan, pinged]).update(created_at=now - timedelta(minutes=31),
                                                                           last_seen_at=now - timedelta(minutes=31))
    McpSession.objects.filter(pk=worked).update(last_seen_at=now - timedelta(hours=25))
    # a session that only listed tools and pinged is an orphan however recently it was seen
    assert b.legacy(pinged, "tools/list").status_code == 404
    assert a.legacy(worked, "ping").status_code == 404  # idle past the limit is gone even before the sweep
    assert a.legacy(lunch, "ping").status_code == 200  # 31 minutes idle after tool calls: still there
    assert call_tool(a, "brain_list_projects", session=lunch)
    assert sweep_idle_sessions.apply().get() == 3
    assert McpSession.objects.get(pk=worked).close_reason == "idle"
    assert McpSession.objects.get(pk=lunch).closed_at is None and McpSession.objects.get(pk=fresh).closed_at is None
    assert sorted(f["sessionPrefix"] for f in ops(caplog, "mcp.session.orphan")) == sorted([orphan[:8], pinged[:8]])
    assert [f["sessionPrefix"] for f in ops(caplog, "mcp.session.close")] == [worked[:8]]
    assert mcp_sessions_sweep() == 0  # idempotent


@override_settings(MCP_MAX_SESSIONS_PER_TOKEN=2)
def test_cap_evicts_the_least_recently_seen_session(client: Client, tenant_a, tenant_b) -> None:
    a = Mcp(client, tenant_a.user_raw)
    oldest, newer = a.initialize(), a.initialize()
    McpSession.objects.filter(pk=oldest).update(last_seen_at=timezone.now() - timedelta(minutes=5))
    b_session = Mcp(client, tenant_b.user_raw).initialize()
    third = a.initialize()
    assert McpSession.objects.get(pk=oldest).close_reason == "evicted"
    assert set(McpSession.objects.filter(closed_at__isnull=True).values_list("pk", flat=True)) == {
        newer, third, b_session}
    assert a.legacy(oldest, "ping").status_code == 404


@override_settings(MCP_SESSION_RETENTION_DAYS=7)
def test_sessions_closed_past_the_retention_are_purged_by_the_sweep(client: Client, tenant_a, tenant_b,
                                                                     caplog) -> None:
    a, b = Mcp(client, tenant_a.user_raw), Mcp(client, tenant_b.user_raw)
    old_a, recent_a, open_a, old_b = a.initialize(), a.initialize(), a.initialize(), b.initialize()
    now = timezone.now()
    McpSession.objects.filter(pk__in=[old_a, old_b]).update(closed_at=now - timedelta(days=8), close_reason="idle")
    McpSession.objects.filter(pk=recent_a).update(closed_at=now - timedelta(days=6), close_reason="deleted")
    # An idle session is first closed by the sweep, then kept for the retention time.
    month_ago = now - timedelta(days=30)
    McpSession.objects.filter(pk=open_a).update(created_at=month_ago, last_seen_at=month_ago)
    assert sweep_idle_sessions.apply().get() == 1
    assert set(McpSession.objects.values_list("pk", flat=True)) == {recent_a, open_a}
    assert [f["count"] for f in ops(caplog, "mcp.sessions.purged")] == [2]
    assert a.legacy(old_a, "ping").status_code == 404  # a purged id answers like any closed one
    assert mcp_sessions_purge(now=now + timedelta(days=8)) == 2  # later: the rest go too
    assert not McpSession.objects.exists()
