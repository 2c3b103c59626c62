"""Dashboard reads of sessions: list, detail, daily series and the extraction funnel.

Sessions are private to the user who ran them: every query filters by the caller and the (already
visible) project in SQL, and each page costs a fixed number of queries whatever the row count."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db.models import Avg, Count, F, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from brain.errors import NotFound
from brain.paging import page_slice
from knowledge.models import KnowledgeItem, Proposal
from projects.models import Project
from projects.scope import Principal
from sessions.models import ApplicationRole, JobStatus, Session, SessionEvent, SessionJob, SessionKnowledgeApplication

PAGE = 50
EVENTS_MAX = 500


def _sessions(principal: Principal, project: Project) -> QuerySet[Session]:
    return Session.objects.filter(user=principal.user, project=project)


def sessions_list(
    *, principal: Principal, project: Project, page: int = 1, outcome: str = "", client: str = "",
) -> tuple[list[Any], bool]:
    """A page of the caller's sessions with injected/used counts and duration, in one query."""
    qs = _sessions(principal, project)
    if outcome in {"success", "failure"}:
        qs = qs.filter(success=outcome == "success")
    elif outcome == "open":
        qs = qs.filter(ended_at__isnull=True)
    if client:
        qs = qs.filter(client_type=client)
    qs = qs.annotate(
        injected=Count("applications", filter=Q(applications__role=ApplicationRole.INJECTED)),
        used=Count("applications", filter=Q(applications__role=ApplicationRole.USED_REPORTED)),
        duration=F("ended_at") - F("started_at"),
    ).defer("outcome")
    return page_slice(qs.order_by("-started_at", "-id"), page, PAGE)


def session_clients(*, principal: Principal, project: Project) -> list[str]:
    qs = _sessions(principal, project).exclude(client_type="").order_by()  # no ordering: DISTINCT on the client only
    return sorted(qs.values_list("client_type", flat=True).distinct()[:30])


@dataclass
class SessionDetail:
    session: Session
    events: list[SessionEvent]
    injected: list[SessionKnowledgeApplication]
    used: list[SessionKnowledgeApplication]
    jobs: list[SessionJob]
    events_total: int = 0  # all the session's events; the timeline holds the first EVENTS_MAX


def session_detail(*, principal: Principal, project: Project, session_id: uuid.UUID | str) -> SessionDetail:
    """One of the caller's sessions with its timeline, knowledge and jobs (four queries)."""
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        raise NotFound(f"session {session_id} not found") from None
    session = _sessions(principal, project).filter(pk=pk).first()
    if session is None:
        raise NotFound(f"session {session_id} not found")
    logged = SessionEvent.objects.filter(session=session)
    events = list(logged.defer("embedding", "search_vector").order_by("occurred_at", "created_at")[:EVENTS_MAX])
    total = logged.count() if len(events) == EVENTS_MAX else len(events)  # a count only when the cut may hide some
    apps = list(SessionKnowledgeApplication.objects.filter(session=session).select_related("knowledge")
                .only("role", "outcome", "knowledge__id", "knowledge__type", "knowledge__content",
                      "knowledge__deleted_at", "knowledge__superseded_by_id"))
    return SessionDetail(
        session=session, events=events, jobs=list(SessionJob.objects.filter(session=session).order_by("name")),
        injected=[a for a in apps if a.role == ApplicationRole.INJECTED],
        used=[a for a in apps if a.role == ApplicationRole.USED_REPORTED], events_total=total,
    )


def knowledge_applications(
    *, principal: Principal, item: KnowledgeItem, limit: int = 50,
) -> list[SessionKnowledgeApplication]:
    """Where an item reached the caller's own sessions (injected or reported used), newest first."""
    return list(SessionKnowledgeApplication.objects.filter(knowledge=item, session__user=principal.user)
                .select_related("session").order_by("-session__started_at")[:limit])


def sessions_by_ids(*, principal: Principal, ids: list[uuid.UUID]) -> list[Session]:
    return list(Session.objects.filter(user=principal.user, id__in=ids).order_by("-started_at")[:50])


@dataclass(frozen=True)
class DaySessions:
    day: date
    started: int
    average_quality: float | None  # of the sessions closed so far


def sessions_per_day(*, principal: Principal, project: Project, days: int) -> list[DaySessions]:
    """Per day: sessions started, average quality score of the closed ones (one GROUP BY)."""
    since = timezone.now() - timedelta(days=days)
    rows = (_sessions(principal, project).filter(started_at__gte=since).annotate(day=TruncDate("started_at"))
            .values("day").annotate(n=Count("id"), quality=Avg("quality_score")).order_by("day"))
    return [DaySessions(day=r["day"], started=r["n"], average_quality=r["quality"]) for r in rows]


def injected_used_per_day(*, principal: Principal, project: Project, days: int) -> list[tuple[date, int, int]]:
    """Per day of session start: knowledge rows injected, and how many of those the agent reported used."""
    since = timezone.now() - timedelta(days=days)
    rows = (SessionKnowledgeApplication.objects
            .filter(session__user=principal.user, session__project=project, session__started_at__gte=since)
            .annotate(day=TruncDate("session__started_at")).values("day")
            .annotate(inj=Count("id", filter=Q(role=ApplicationRole.INJECTED)),
                      used=Count("id", filter=Q(role=ApplicationRole.USED_REPORTED)))
            .order_by("day"))
    return [(r["day"], r["inj"], r["used"]) for r in rows]


def extraction_funnel(*, principal: Principal, project: Project) -> list[tuple[str, int]]:
    """Closed sessions → extraction done → rows extracted → proposals made → proposals approved."""
    sessions = _sessions(principal, project)
    closed = sessions.filter(ended_at__isnull=False).count()
    jobs = SessionJob.objects.filter(session__in=sessions, name="extract").aggregate(
        done=Count("id", filter=Q(status=JobStatus.DONE)), items=Sum("items"))
    props = Proposal.objects.filter(owner=principal.user, project=project).aggregate(
        made=Count("id"), approved=Count("id", filter=Q(status="approved")))
    return [("Sessions closed", closed), ("Extraction runs", jobs["done"] or 0),
            ("Rows extracted", jobs["items"] or 0), ("Proposals", props["made"] or 0),
            ("Approved", props["approved"] or 0)]


@dataclass(frozen=True)
class SessionTotals:
    total: int
    open: int
    succeeded: int
    average_quality: float | None


def session_totals(*, principal: Principal, project: Project) -> SessionTotals:
    totals = _sessions(principal, project).aggregate(
        total=Count("id"), open=Count("id", filter=Q(ended_at__isnull=True)),
        succeeded=Count("id", filter=Q(success=True)), quality=Avg("quality_score"))
    return SessionTotals(total=totals["total"], open=totals["open"], succeeded=totals["succeeded"],
                         average_quality=totals["quality"])
