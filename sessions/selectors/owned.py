"""The caller's own sessions: ownership lookups for writes, recent sessions for the resources."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from brain.errors import NotFound
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from sessions.models import Session

RECENT_SESSIONS = 10


def sessions_owned(*, principal: Principal) -> QuerySet[Session]:
    """The caller's sessions in projects the token can see (a scoped token: its project only)."""
    return Session.objects.filter(user=principal.user, project__in=projects_visible(principal=principal).values("id"))


def session_owned(*, principal: Principal, session_id: str | uuid.UUID, for_update: bool = False) -> Session:
    """One of the caller's sessions; a missing one and someone else's give the same NOT_FOUND."""
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        raise NotFound(f"session {str(session_id)[:60]} not found") from None
    qs = sessions_owned(principal=principal).select_related("project")
    if for_update:
        qs = qs.select_for_update(of=("self",))
    session = qs.filter(pk=pk).first()
    if session is None:
        raise NotFound(f"session {session_id} not found; start one with brain_start_session")
    return session


def sessions_recent(*, principal: Principal, limit: int = RECENT_SESSIONS) -> list[Session]:
    """The caller's latest sessions, newest first, with their projects."""
    return list(sessions_owned(principal=principal).select_related("project").order_by("-started_at", "-id")[:limit])


def session_open_project(*, principal: Principal) -> uuid.UUID | None:
    """The project of the caller's most recently started open session (where its agent is working now)."""
    latest = sessions_owned(principal=principal).filter(ended_at__isnull=True).order_by("-started_at", "-id")
    return latest.values_list("project_id", flat=True).first()
