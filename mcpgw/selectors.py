"""Reads of MCP sessions."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from mcpgw.models import SESSION_ID_MAX, McpSession
from projects.models import ApiToken


def idle_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS)


def mcp_session_live(*, session_id: str) -> McpSession | None:
    """The open, not yet idle-expired session with this id (whoever owns it: the caller compares tokens)."""
    if not session_id or len(session_id) > SESSION_ID_MAX:
        return None
    return (
        McpSession.objects.filter(pk=session_id, closed_at__isnull=True, last_seen_at__gte=idle_cutoff())
        .select_related("token")
        .first()
    )


def mcp_sessions_open_of(*, token: ApiToken) -> QuerySet[McpSession]:
    return McpSession.objects.filter(token=token, closed_at__isnull=True)
