"""The implicit current session of the Cognibrain tools: one open agent session per user, project and
binding, opened by the first call (client type `cognibrain`), closed by cognibrain_session_end through the
same outcome path as brain_report_session_outcome, or by the sweep after 2 idle hours as abandoned.

The binding is the transport session the calls arrive on (Principal.binding): in the MCP handshake era each
Mcp-Session-Id gets its own agent session, closed with it (`sessions_bound_close`); stateless calls share
the unbound one (blank binding)."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.db import connection, transaction
from django.db.models import Max, QuerySet
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from brain.errors import Conflict, ValidationFailed
from brain.logs import log_op
from brain.sql_rows import xact_lock
from brain.text import text_storable
from knowledge.models import KnowledgeItem
from knowledge.services.knowledge_vectors import TASK_TAG_PREFIX
from projects.models import PROJECT_NAME_MAX, Project
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from projects.services.resolve import project_resolve
from sessions.models import Session, SessionEvent
from sessions.services.events import session_start
from sessions.services.outcome import OutcomeReport, SessionClosed, session_report_outcome

logger = logging.getLogger(__name__)
CLIENT_TYPE = "cognibrain"
IDLE_AFTER = timedelta(hours=2)
CURRENT_ATTEMPTS = 3  # a write finding its session just closed moves to the next one; more is a client in a loop
T = TypeVar("T")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?$")


def task_tag(session: Session) -> str:
    """The tag of memories stored with scope `task`: they live as long as this session."""
    return f"{TASK_TAG_PREFIX}{session.id}"


def _lock(*keys: object) -> None:
    # One current session per (user, project), even when two first calls race.
    xact_lock("cognibrain:" + ":".join(map(str, keys)))


def _repo_project(principal: Principal, repo: str) -> Project:
    if not _REPO.match(repo) or len(repo) > PROJECT_NAME_MAX:
        raise ValidationFailed(f"repo must look like owner/name (letters, digits, . _ -); got {repo[:80]!r}")
    found = projects_visible(principal=principal).filter(name__iexact=repo).first()
    return found or project_resolve(principal=principal, project_name=repo).project


def _open_of(principal: Principal, *, any_binding: bool = False) -> Session | None:
    found = Session.objects.filter(user=principal.user, client_type=CLIENT_TYPE, ended_at__isnull=True,
                                   project__in=projects_visible(principal=principal))
    if not any_binding:
        found = found.filter(binding=principal.binding)
    return found.order_by("-started_at").first()


def current_project(*, principal: Principal, repo: str | None = None) -> Project:
    """The token's project; else `repo` by name in the caller's orgs (created on first use); else the
    project of the caller's open Cognibrain session (this binding's first, then any); else the brain tools'
    fallback."""
    text_storable(repo=repo)
    if principal.is_project_scoped or (repo is None or not repo.strip()):
        if principal.is_project_scoped:
            return project_resolve(principal=principal).project
        if (open_now := _open_of(principal) or _open_of(principal, any_binding=True)) is not None:
            return open_now.project
        return project_resolve(principal=principal).project
    return _repo_project(principal, repo.strip())


def session_current_open(*, principal: Principal) -> Session | None:
    """The caller's open current session (the token's project for a project-scoped token), or None."""
    if principal.is_project_scoped:
        project = current_project(principal=principal)
        return _open_in(principal, project)
    return _open_of(principal)


def _open_in(principal: Principal, project: Project) -> Session | None:
    return (Session.objects.filter(user=principal.user, project=project, client_type=CLIENT_TYPE,
                                   binding=principal.binding, ended_at__isnull=True)
            .order_by("-started_at").first())


def session_current(*, principal: Principal, repo: str | None = None) -> Session:
    """The open current session of the caller in the resolved project, opened when there is none."""
    project = current_project(principal=principal, repo=repo)
    with transaction.atomic():
        _lock(principal.user.id, project.id, principal.binding)
        if (found := _open_in(principal, project)) is not None:
            return found
        session = session_start(user=principal.user, project=project, client_type=CLIENT_TYPE, prompt="",
                                binding=principal.binding)
    log_op(logger, "cognibrain.session_open", session=str(session.id)[:8], project=str(project.id)[:8],
           bound=bool(principal.binding))
    return session


class CurrentSessionEnded(Exception):
    """The current session closed between finding it and writing to it (an end, a DELETE of its MCP session, the
    idle sweep); the write rolled back and belongs in the next current session."""


def session_hold_open(session: Session) -> None:
    """Inside the caller's transaction: keeps the session open until it commits (FOR KEY SHARE, which a close's
    FOR UPDATE waits for), or raises CurrentSessionEnded when it closed meanwhile. Without it a task memory written
    just after the close was never dropped, and events landed after the close had scored the session."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT 1 FROM "{Session._meta.db_table}" '  # noqa: S608 - the table name from the model
                       "WHERE id = %s AND ended_at IS NULL FOR KEY SHARE", [session.pk])
        if cursor.fetchone() is None:
            raise CurrentSessionEnded(str(session.pk))


def in_current_session(principal: Principal, work: Callable[[Session], T]) -> T:
    """`work` on the caller's current session; on the next one when that closed before `work` could write."""
    for _ in range(CURRENT_ATTEMPTS):
        try:
            return work(session_current(principal=principal))
        except CurrentSessionEnded:
            continue
    raise Conflict("the current session kept closing while this call wrote to it; retry", details={"retryable": True})


def _failures(session: Session) -> list[str]:
    rows = SessionEvent.objects.filter(session=session, event_type="error", payload__kind="command_outcome")
    return [f"{r.payload.get('command', '')}: {str(r.payload.get('stderr', ''))[:200]}" for r in rows[:20]]


def _last_command_ok(session: Session) -> bool:
    last = (SessionEvent.objects.filter(session=session, payload__kind="command_outcome")
            .order_by("-occurred_at").first())
    return last is None or last.event_type != "error"


def task_memories_drop(*, session: Session) -> int:
    return KnowledgeItem.objects.filter(tags__contains=[task_tag(session)], deleted_at__isnull=True).update(
        deleted_at=timezone.now())


@dataclass(frozen=True)
class Ended:
    session: Session
    closed: SessionClosed


def session_current_end(
    *, principal: Principal, session: Session, abandoned: bool = False, summary: str = "",
) -> Ended:
    """Closes the session through the outcome path: success unless its last command failed (or abandoned)."""
    failures = _failures(session)
    default = "abandoned: idle for 2 hours" if abandoned else "closed by cognibrain_session_end"
    report = OutcomeReport(
        success=not abandoned and _last_command_ok(session), errors=failures[:20], summary=summary or default,
        extra={"abandoned": True} if abandoned else {},
    )
    with transaction.atomic():  # the task memories go with the close, or neither happens
        closed = session_report_outcome(principal=principal, session_id=str(session.id), report=report)
        task_memories_drop(session=session)
    log_op(logger, "cognibrain.session_end", session=str(session.id)[:8], abandoned=abandoned,
           sqs=closed.scores.sqs)
    return Ended(session, closed)


def _idle(cutoff: datetime) -> QuerySet[Session]:
    return (Session.objects.filter(client_type=CLIENT_TYPE, ended_at__isnull=True)
            .annotate(seen=Greatest("started_at", Coalesce(Max("events__occurred_at"), "started_at")))
            .filter(seen__lt=cutoff))


def close_if_still_idle(*, session_id: uuid.UUID, cutoff: datetime) -> bool:
    """Closes the session as abandoned when, with its row locked, it is still open and idle since `cutoff`: a
    call that arrived after the sweep listed it (its event insert holds the row until it commits) keeps it open."""
    with transaction.atomic():
        locked = Session.objects.select_for_update(of=("self",)).filter(pk=session_id, ended_at__isnull=True)
        if not locked.exists() or not _idle(cutoff).filter(pk=session_id).exists():
            return False
        session = Session.objects.select_related("user").get(pk=session_id)
        session_current_end(principal=Principal(user=session.user), session=session, abandoned=True)
    return True


def cognibrain_sessions_sweep(*, now: datetime | None = None) -> int:
    """Closes every current session idle for IDLE_AFTER as abandoned; returns how many."""
    cutoff = (now or timezone.now()) - IDLE_AFTER
    count = sum(close_if_still_idle(session_id=pk, cutoff=cutoff) for pk in _idle(cutoff).values_list("pk", flat=True))
    if count:
        log_op(logger, "cognibrain.sweep", closed=count)
    return count


def sessions_bound_close(*, binding: str, abandoned: bool, summary: str) -> int:
    """Closes the open current sessions bound to a transport session that ended: as completed (the same
    close as cognibrain_session_end, without the dream cycle) or as abandoned; returns how many."""
    if not binding:
        return 0
    bound = Session.objects.filter(binding=binding, client_type=CLIENT_TYPE, ended_at__isnull=True)
    count = 0
    for session in bound.select_related("user"):
        session_current_end(principal=Principal(user=session.user), session=session, abandoned=abandoned,
                            summary=summary)
        count += 1
    return count
