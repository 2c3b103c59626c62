"""Writes of MCP sessions: open, touch, close, and the idle sweep."""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from brain.logs import log_op
from brain.text import text_storable
from mcpgw.models import CLIENT_NAME_MAX, CLIENT_VERSION_MAX, McpSession
from mcpgw.selectors import live_q, mcp_sessions_open_of
from projects.models import ApiToken
from sessions.selectors.cognibrain import bindings_open
from sessions.services.current import sessions_bound_close

logger = logging.getLogger("mcpgw")
# What becomes of the Cognibrain session bound to an MCP session that ends: a DELETE is the client saying it
# is done (closed as completed, like cognibrain_session_end without the dream cycle); an expiry or an eviction
# is the client gone silent (closed as abandoned, like the 2-hour sweep).
BOUND_CLOSE = {
    "deleted": (False, "completed: its MCP session was closed by the client (DELETE)"),
    "idle": (True, "abandoned: its MCP session expired (idle)"),
    "evicted": (True, "abandoned: its MCP session was evicted (too many open sessions for this token)"),
}
# last_seen_at only needs minute precision against an idle limit of hours: skip most writes.
SEEN_INTERVAL = timedelta(seconds=30)


def _log_end(session: McpSession, reason: str) -> None:
    op = "mcp.session.close" if session.tool_call_count else "mcp.session.orphan"
    log_op(logger, op, sessionPrefix=session.prefix, reason=reason, toolCalls=session.tool_call_count)


@transaction.atomic
def mcp_session_open(
    *, token: ApiToken, protocol_version: str, client_name: str = "", client_version: str = ""
) -> McpSession:
    """A new session for this token; past the per-token cap the least recently seen ones are evicted."""
    text_storable(**{"clientInfo.name": client_name, "clientInfo.version": client_version})
    now = timezone.now()
    open_qs = mcp_sessions_open_of(token=token).select_for_update().order_by("last_seen_at")
    surplus = open_qs.count() - settings.MCP_MAX_SESSIONS_PER_TOKEN + 1
    for old in list(open_qs[: max(surplus, 0)]):
        _close(old, reason="evicted", now=now)
    session = McpSession.objects.create(
        id=secrets.token_urlsafe(32), token=token, protocol_version=protocol_version,
        client_name=client_name[:CLIENT_NAME_MAX], client_version=client_version[:CLIENT_VERSION_MAX], last_seen_at=now,
    )
    total = mcp_sessions_open_of(token=token).count()
    log_op(logger, "mcp.session.open", sessionPrefix=session.prefix, version=protocol_version,
           client=client_name[:60] or None, total=total)
    return session


def mcp_session_seen(*, session: McpSession, tool_call: bool = False) -> None:
    """Counts a tool call (always written) and refreshes last_seen_at (at most every 30 s otherwise)."""
    now = timezone.now()
    if not tool_call and now - session.last_seen_at < SEEN_INTERVAL:
        return
    updates: dict[str, object] = {"last_seen_at": now}
    if tool_call:
        updates["tool_call_count"] = F("tool_call_count") + 1
        session.tool_call_count += 1
    McpSession.objects.filter(pk=session.pk).update(**updates)
    session.last_seen_at = now


def _close(session: McpSession, *, reason: str, now: datetime) -> bool:
    closed = McpSession.objects.filter(pk=session.pk, closed_at__isnull=True).update(closed_at=now, close_reason=reason)
    if closed:
        session.refresh_from_db(fields=["tool_call_count"])
        _log_end(session, reason)
        abandoned, summary = BOUND_CLOSE[reason]
        sessions_bound_close(binding=session.binding, abandoned=abandoned, summary=summary)
    return bool(closed)


@transaction.atomic
def mcp_session_close(*, session: McpSession) -> bool:
    """Ends a session the client DELETEd; False if it was already closed."""
    return _close(session, reason="deleted", now=timezone.now())


def mcp_sessions_sweep(*, now: datetime | None = None) -> int:
    """Closes every open session that expired (selectors.live_q); each is logged (orphan when it made no tool
    call)."""
    now = now or timezone.now()
    idle = McpSession.objects.filter(closed_at__isnull=True).exclude(live_q(now))
    swept = 0
    for session in idle.iterator():
        # Conditional UPDATE inside _close: two sweepers racing log each session once. One transaction per session:
        # the MCP session and the agent session bound to it close together, or neither does.
        with transaction.atomic():
            swept += _close(session, reason="idle", now=now)
    return swept


# A tool call already past its session check when the client DELETEs can open a Cognibrain session after the close
# ended the bound ones. The sweep ends such a late session as the close would have; it looks back this far (a late
# session appears within a call's length of the close).
LATE_BOUND_WINDOW = timedelta(hours=1)


def mcp_sessions_late_bound_close(*, now: datetime | None = None) -> int:
    """Ends the open Cognibrain sessions bound to an MCP session closed within LATE_BOUND_WINDOW, with that close's
    reason; returns how many (each is logged)."""
    now = now or timezone.now()
    open_bindings = bindings_open()
    if not open_bindings:
        return 0
    recent = McpSession.objects.filter(closed_at__gte=now - LATE_BOUND_WINDOW).only("id", "close_reason")
    ended = 0
    for session in recent.iterator():
        if session.binding in open_bindings:
            abandoned, summary = BOUND_CLOSE.get(session.close_reason, BOUND_CLOSE["idle"])
            with transaction.atomic():
                count = sessions_bound_close(binding=session.binding, abandoned=abandoned, summary=summary)
            log_op(logger, "mcp.session.late_bound_closed", sessionPrefix=session.prefix,
                   reason=session.close_reason, count=count)
            ended += count
    return ended


def mcp_sessions_purge(*, now: datetime | None = None) -> int:
    """Deletes sessions closed longer ago than BRAIN_MCP_SESSION_RETENTION_DAYS (their ids can never be used
    again; logs and the close line already hold what they did); logs how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.MCP_SESSION_RETENTION_DAYS)
    deleted, _ = McpSession.objects.filter(closed_at__lt=cutoff).delete()
    if deleted:
        log_op(logger, "mcp.sessions.purged", count=deleted, retentionDays=settings.MCP_SESSION_RETENTION_DAYS)
    return deleted
