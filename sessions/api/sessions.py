"""/api/v1/sessions: the caller's sessions (list with filters, detail with events), scoped like MCP.

Both read `sessions_owned` / `session_owned`, the selectors behind brain://user/recent-sessions and every
session-bound tool: the caller's own sessions in the projects the token can see.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Query, Router, Schema

from brain.errors import ValidationFailed
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.pagination import PageLimit, paginate
from projects.api.schemas import IsoDateTime
from projects.scope import Principal
from projects.selectors.accounts import project_visible
from sessions.api.schemas import SessionDetailOut, SessionOut, SessionPage
from sessions.models import Session
from sessions.selectors.owned import session_owned, sessions_owned

router = Router(tags=["sessions"])
ERRORS = {400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope}
SESSION_KEYS = ("-started_at", "-id")


class SessionFilters(Schema):
    projectId: uuid.UUID | None = None  # noqa: N815
    since: IsoDateTime | None = None
    until: IsoDateTime | None = None
    cursor: str | None = None
    limit: PageLimit = None


def _instant(value: datetime | None, name: str) -> datetime | None:
    # PostgreSQL accepts offsets only up to ±15:59: normalise to UTC first (naive means UTC).
    if value is None:
        return None
    try:
        return value.replace(tzinfo=value.tzinfo or UTC).astimezone(UTC)
    except OverflowError:
        raise ValidationFailed(f"{name} is out of range") from None


def _filtered(principal: Principal, filters: SessionFilters) -> QuerySet[Session]:
    qs = sessions_owned(principal=principal).select_related("project")
    if filters.projectId is not None:
        qs = qs.filter(project=project_visible(principal=principal, project_id=filters.projectId))
    since, until = _instant(filters.since, "since"), _instant(filters.until, "until")
    if since and until and since >= until:
        raise ValidationFailed("since must be earlier than until")
    if since is not None:
        qs = qs.filter(started_at__gte=since)
    if until is not None:
        qs = qs.filter(started_at__lt=until)
    return qs


@router.get("", response={200: SessionPage, **ERRORS}, summary="List your sessions")
def list_sessions(request: HttpRequest, filters: Query[SessionFilters]) -> SessionPage:
    """Newest first; `since`/`until` bound the start time (since inclusive, until exclusive)."""
    qs = _filtered(principal_of(request), filters)
    page = paginate(qs, keys=SESSION_KEYS, cursor=filters.cursor, limit=filters.limit)
    return SessionPage(items=[SessionOut.of(s) for s in page.items], nextCursor=page.next_cursor)


@router.get("/{session_id}", response={200: SessionDetailOut, **ERRORS}, summary="One session with its events")
def get_session(request: HttpRequest, session_id: uuid.UUID) -> SessionDetailOut:
    """A missing session and someone else's give the same 404. Events come in the order they happened."""
    session = session_owned(principal=principal_of(request), session_id=session_id)
    return SessionDetailOut.with_events(session, list(session.events.order_by("occurred_at", "created_at", "id")))
