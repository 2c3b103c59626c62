"""The caller's own sessions: ownership lookups for writes, recent sessions for the resources."""

from __future__ import annotations

import uuid
from functools import cache

from django.db import connection
from django.db.models import QuerySet

from brain.errors import NotFound
from brain.sql_rows import execute_prepared, instances, select_list
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import projects_visible, visible_project_params, visible_project_sql
from sessions.models import Session

RECENT_SESSIONS = 10


def sessions_owned(*, principal: Principal) -> QuerySet[Session]:
    """The caller's sessions in projects the token can see (a scoped token: its project only)."""
    return Session.objects.filter(user=principal.user, project__in=projects_visible(principal=principal).values("id"))


_OWNED = (("s", Session), ("p", Project))


@cache
def _owned_statement(for_update: bool) -> str:
    session, project = Session._meta.db_table, Project._meta.db_table
    # sessions_owned's scope for one session, written once; names come from the models, values are parameters.
    return f"""SELECT {select_list(_OWNED)} FROM "{session}" AS s JOIN "{project}" AS p ON p.id = s.project_id
        WHERE s.id = %(id)s AND s.user_id = %(user)s AND {visible_project_sql("p")}
        {"FOR UPDATE OF s" if for_update else ""}"""  # noqa: S608


def session_owned(*, principal: Principal, session_id: str | uuid.UUID, for_update: bool = False) -> Session:
    """One of the caller's sessions (with its project), by one statement prepared per connection; a missing one
    and someone else's give the same NOT_FOUND. `for_update` locks the session row (the caller's transaction)."""
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        raise NotFound(f"session {str(session_id)[:60]} not found") from None
    params = {**visible_project_params(principal), "id": pk}
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_session_owned_locked" if for_update else "brain_session_owned",
                         _owned_statement(for_update), params)
        row = cursor.fetchone()
    if row is None:
        raise NotFound(f"session {session_id} not found; start one with brain_start_session")
    built = instances(row, _OWNED)
    session, project = built["s"], built["p"]
    assert isinstance(session, Session) and isinstance(project, Project)
    session.project = project
    return session


def sessions_recent(*, principal: Principal, limit: int = RECENT_SESSIONS) -> list[Session]:
    """The caller's latest sessions, newest first, with their projects."""
    return list(sessions_owned(principal=principal).select_related("project").order_by("-started_at", "-id")[:limit])


def session_open_project(*, principal: Principal) -> uuid.UUID | None:
    """The project of the caller's most recently started open session (where its agent is working now)."""
    latest = sessions_owned(principal=principal).filter(ended_at__isnull=True).order_by("-started_at", "-id")
    return latest.values_list("project_id", flat=True).first()
