"""Closing a session: quality score, the confidence loop, close-capture learnings, action items, jobs.

The close is one transaction on the locked session row. A second report of a closed session returns the
stored result with `already_closed` set and changes nothing, so client retries are safe.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from brain.errors import Conflict, ValidationFailed
from brain.logs import log_op
from brain.sql_rows import execute_prepared
from brain.text import text_storable
from knowledge.models import KnowledgeItem, KnowledgeType, review_usable_by
from knowledge.services.skills import skills_promote
from projects.scope import Principal
from sessions.models import Session, SessionEvent
from sessions.outcome_rules import Scores, ask_back_hint, learnings_validate, quality_score
from sessions.selectors.owned import session_owned
from sessions.services.credit import credit_apply, credit_plan, session_events_read
from sessions.services.event_vectors import event_vectors_deferred
from sessions.services.events import EventDraft, session_events_log_many
from sessions.services.jobs import session_jobs_schedule

logger = logging.getLogger(__name__)
MAX_KNOWLEDGE_USED = 100
MAX_RESOLVED = 50
LEARNING_EVENT = "learning_captured"


@dataclass(frozen=True)
class OutcomeReport:
    success: bool
    user_feedback: str | None = None
    build_attempts: int = 1
    errors: Sequence[str] = ()
    files_created: int = 0
    files_modified: int = 0
    files_rejected: int = 0
    knowledge_used: Sequence[str] = ()
    learnings: Sequence[Any] = ()
    resolved_action_item_ids: Sequence[str] = ()
    summary: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LearningAccepted:
    index: int
    trigger: str
    rule: str


@dataclass(frozen=True)
class LearningDropped:
    index: int
    reason: str


@dataclass(frozen=True)
class SessionClosed:
    """What the close did; a repeated report gets the first close's result with `already_closed` set."""

    session_id: uuid.UUID
    scores: Scores
    jobs_queued: bool
    already_closed: bool
    knowledge_updated: int
    action_items_resolved: int
    learnings_accepted: tuple[LearningAccepted, ...]
    learnings_dropped: tuple[LearningDropped, ...]
    hint: str | None = None


def _uuids(values: Sequence[str]) -> list[uuid.UUID]:
    out: list[uuid.UUID] = []
    for value in values:
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError:
            continue  # unknown ids are skipped, like foreign ones
    return list(dict.fromkeys(out))


def _check(report: OutcomeReport) -> None:
    text_storable(userFeedback=report.user_feedback, errors=list(report.errors), summary=report.summary,
                  learnings=list(report.learnings), knowledgeUsed=list(report.knowledge_used),
                  resolvedActionItemIds=list(report.resolved_action_item_ids))
    if report.user_feedback not in (None, "", "up", "down"):
        raise ValidationFailed("userFeedback must be 'up', 'down' or omitted")
    if report.build_attempts < 1:
        raise ValidationFailed("buildAttempts must be at least 1")
    if min(report.files_created, report.files_modified, report.files_rejected) < 0:
        raise ValidationFailed("file counts must not be negative")
    if len(report.knowledge_used) > MAX_KNOWLEDGE_USED:
        raise ValidationFailed(f"knowledgeUsed holds at most {MAX_KNOWLEDGE_USED} ids")
    if len(report.resolved_action_item_ids) > MAX_RESOLVED:
        raise ValidationFailed(f"resolvedActionItemIds holds at most {MAX_RESOLVED} ids")


def _confidence_loop(principal: Principal, session: Session, report: OutcomeReport, ok: bool,
                     events: Sequence[SessionEvent]) -> int:
    """Honest credit (sessions/services/credit.py): used rows credited, ignored ones a little less trusted,
    rejected ones much less; then skills that earned it move up a stage."""
    credit = credit_plan(principal=principal, session=session, used_ids=report.knowledge_used,
                         summary=report.summary, events=events)
    stages = credit_apply(session=session, credit=credit, ok=ok)
    skills_promote(ids=credit.used, stages={stages[i] for i in credit.used if i in stages})
    return credit.changed


def _retire_action_items(session: Session, ids: Sequence[str]) -> int:
    if not ids:  # the usual close: no query to build
        return 0
    return KnowledgeItem.objects.filter(
        review_usable_by(session.user_id), id__in=_uuids(ids), project_id=session.project_id,
        type=KnowledgeType.ACTION_ITEM, deleted_at__isnull=True,
    ).update(deleted_at=timezone.now())


def _capture(session: Session, accepted: list[tuple[int, dict[str, Any]]], events: Sequence[SessionEvent]) -> None:
    """The accepted learnings as events after the session's last (its events were read under the session's lock)."""
    drafts = [
        EventDraft(LEARNING_EVENT, f"{item['trigger']}: {item['rule']} {item['rationale']}".strip(), item)
        for _, item in accepted
    ]
    if drafts:
        after = max((e.position for e in events if e.position is not None), default=-1) + 1
        session_events_log_many(session=session, drafts=drafts, defer_vectors=event_vectors_deferred(),
                                position=after)


def _errors_seen(events: Sequence[SessionEvent], report: OutcomeReport) -> int:
    """Errors reported at close plus `error` events logged during the session."""
    return len(report.errors) + sum(1 for e in events if e.event_type == "error")


def _queue_jobs(session: Session) -> bool:
    """Records extract + autoskill with the close; they are sent to the broker after commit."""
    return bool(session_jobs_schedule(session=session))


def session_report_outcome(*, principal: Principal, session_id: str, report: OutcomeReport) -> SessionClosed:
    """Closes the caller's session once; a repeat returns the first result with already_closed=True."""
    _check(report)
    with transaction.atomic():
        session = session_owned(principal=principal, session_id=session_id, for_update=True)
        if session.ended_at is not None:
            return replace(_closed_of_record(session), already_closed=True)
        result = _close(principal, session, report)
    log_op(logger, "report.learnings_captured", session=str(session.id)[:8],
           accepted=len(result.learnings_accepted), dropped=len(result.learnings_dropped))
    return result


def _close(principal: Principal, session: Session, report: OutcomeReport) -> SessionClosed:
    feedback = report.user_feedback or None
    events = session_events_read(session)  # one read for the error count and the credit
    scores = quality_score(
        success=report.success, errors=_errors_seen(events, report), user_feedback=feedback,
        files_created=report.files_created, files_modified=report.files_modified,
        files_rejected=report.files_rejected, build_attempts=report.build_attempts,
    )
    ok = report.success and feedback != "down"
    bumped = _confidence_loop(principal, session, report, ok, events)
    verdict = learnings_validate(list(report.learnings))
    _capture(session, verdict.accepted, events)
    resolved = _retire_action_items(session, report.resolved_action_item_ids)
    queued = _queue_jobs(session)
    result = SessionClosed(
        session_id=session.id, scores=scores, jobs_queued=queued, already_closed=False, knowledge_updated=bumped,
        action_items_resolved=resolved,
        learnings_accepted=tuple(LearningAccepted(i, it["trigger"], it["rule"]) for i, it in verdict.accepted),
        learnings_dropped=tuple(LearningDropped(d["index"], d["reason"]) for d in verdict.dropped),
        hint=ask_back_hint(learnings_submitted=len(report.learnings), success=report.success, user_feedback=feedback),
    )
    session.ended_at = session.updated_at = timezone.now()
    session.success, session.user_feedback, session.quality_score = report.success, feedback or "", scores.sqs
    session.outcome = {"report": _report_record(report), "result": _result_record(result)}
    _closed_write(session)
    return result


_CLOSED_FIELDS = ("ended_at", "success", "user_feedback", "quality_score", "outcome", "updated_at")


@cache
def _closed_statement() -> str:
    column = {f.attname: f.column for f in Session._meta.concrete_fields}
    values = ", ".join(f'"{column[name]}" = %({name})s' for name in _CLOSED_FIELDS)
    return f'UPDATE "{Session._meta.db_table}" SET {values} WHERE "id" = %(id)s'  # noqa: S608 - names from the model


def _closed_write(session: Session) -> None:
    """The session's outcome fields, as `save(update_fields=...)` writes them, by one statement prepared per
    connection (the ORM rebuilt the UPDATE on every close)."""
    fields: dict[str, Any] = {f.attname: f for f in Session._meta.concrete_fields}  # adapted as the ORM adapts them
    params = {name: fields[name].get_db_prep_save(getattr(session, name), connection) for name in _CLOSED_FIELDS}
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_session_closed", _closed_statement(), params | {"id": session.id})


# `Session.outcome` is stored JSON that the REST API and the export show as it is, so it keeps the keys it has
# always been written with (the tool's field names); these three functions are its only writers and reader.
def _report_record(report: OutcomeReport) -> dict[str, Any]:
    return {
        "success": report.success, "userFeedback": report.user_feedback, "buildAttempts": report.build_attempts,
        "errors": list(report.errors)[:50], "filesCreated": report.files_created,
        "filesModified": report.files_modified, "filesRejected": report.files_rejected,
        "knowledgeUsed": list(report.knowledge_used), "resolvedActionItemIds": list(report.resolved_action_item_ids),
        "summary": report.summary[:4000],
    }


def _result_record(result: SessionClosed) -> dict[str, Any]:
    scores = result.scores
    record: dict[str, Any] = {
        "sessionId": str(result.session_id), "sqs": scores.sqs, "queued": result.jobs_queued,
        "alreadyClosed": result.already_closed, "knowledgeUpdated": result.knowledge_updated,
        "resolvedActionItems": result.action_items_resolved,
        "scores": {"build": scores.build, "feedback": scores.feedback, "diffAcceptance": scores.diff_acceptance,
                   "penalty": scores.penalty},
        "learnings": {"accepted": [{"index": a.index, "trigger": a.trigger, "rule": a.rule}
                                   for a in result.learnings_accepted],
                      "dropped": [{"index": d.index, "reason": d.reason} for d in result.learnings_dropped]},
    }
    if result.hint:
        record["hint"] = result.hint
    return record


def _closed_of_record(session: Session) -> SessionClosed:
    record = (session.outcome or {}).get("result")
    if not record:  # ended by other means (an import, the admin): there is no first result to repeat
        raise Conflict(f"session {session.id} was closed without an outcome report; start a new session")
    scores, learnings = record["scores"], record["learnings"]
    return SessionClosed(
        session_id=uuid.UUID(record["sessionId"]), jobs_queued=record["queued"],
        already_closed=record["alreadyClosed"], knowledge_updated=record["knowledgeUpdated"],
        action_items_resolved=record["resolvedActionItems"], hint=record.get("hint"),
        scores=Scores(build=scores["build"], feedback=scores["feedback"], diff_acceptance=scores["diffAcceptance"],
                      penalty=scores["penalty"], sqs=record["sqs"]),
        learnings_accepted=tuple(LearningAccepted(a["index"], a["trigger"], a["rule"]) for a in learnings["accepted"]),
        learnings_dropped=tuple(LearningDropped(d["index"], d["reason"]) for d in learnings["dropped"]),
    )
