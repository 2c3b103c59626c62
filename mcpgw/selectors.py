"""Reads of MCP sessions."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from mcpgw.models import SESSION_ID_MAX, McpSession
from projects.models import ApiToken


def idle_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS)


def orphan_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=settings.MCP_ORPHAN_SECONDS)


def live_q(now: datetime) -> Q:
    """An open session that has not expired: one that made a tool call lives until it is idle past
    MCP_SESSION_IDLE_SECONDS; one that made none (an orphan: a token that authenticates but does no work) ends
    MCP_ORPHAN_SECONDS after it opened, as the spec's sweeper evicts them. session_call.py spells this in SQL."""
    worked = Q(tool_call_count__gt=0, last_seen_at__gte=idle_cutoff(now))
    return Q(closed_at__isnull=True) & (worked | Q(tool_call_count=0, created_at__gte=orphan_cutoff(now)))


def mcp_session_live(*, session_id: str) -> McpSession | None:
    """The open, not yet expired session with this id (whoever owns it: the caller compares tokens)."""
    if not session_id or len(session_id) > SESSION_ID_MAX:
        return None
    return (
        McpSession.objects.filter(live_q(timezone.now()), pk=session_id)
        .select_related("token")
        .first()
    )


def mcp_sessions_open_of(*, token: ApiToken) -> QuerySet[McpSession]:
    return McpSession.objects.filter(token=token, closed_at__isnull=True)
