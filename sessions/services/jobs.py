"""Jobs owed to closed sessions: recorded with the close, claimed once, finished once, re-sent if lost.

Whoever closes a session calls `session_jobs_schedule(session=...)` inside the close transaction. The
rows commit with the close; the broker messages are sent after commit, from the process's sender thread
(`brain.broker.send_soon`), and a broker outage or a process that dies first only leaves the rows pending,
for `session_jobs_requeue` (beat, every minute) to send again later.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, partial
from typing import cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from brain.broker import Message, no_mark, send_quick, send_soon
from brain.config import overridden
from brain.errors import ValidationFailed
from brain.logs import log_op
from brain.sql_rows import db_values, instances, relaxed_prefix, select_list
from sessions.models import JobStatus, Session, SessionJob

logger = logging.getLogger(__name__)

JOB_TASKS = {"extract": "sessions.tasks.session_extract", "autoskill": "sessions.tasks.session_autoskill"}
JOB_ALIAS = (("j", SessionJob),)
JOB_OPS = {"extract": "kea.extract", "autoskill": "autoskill.run"}


@dataclass(frozen=True)
class JobSettings:
    """The defaults; `BRAIN_JOBS` in settings holds what the environment overrides (`job_settings()`)."""

    lease_s: int = 600  # a claimed job older than this is re-sent: its worker died mid-run
    requeue_after_s: int = 120  # a sent job nobody picked up by then is sent again


def job_settings() -> JobSettings:
    return overridden(JobSettings(), settings.BRAIN_JOBS)


class TransientJobError(Exception):
    """The job failed in a way a later attempt may not (provider down, database hiccup): retry it."""


class JobLost(Exception):
    """The claim was taken over (lease expired, another worker claimed it): this run must write nothing."""


@dataclass(frozen=True)
class Claim:
    job_id: uuid.UUID
    token: uuid.UUID

    def finish(self, *, items: int, outcome: str = "ok") -> None:
        """Marks the job done; call inside the transaction that writes the result, so both commit or neither."""
        done = SessionJob.objects.filter(id=self.job_id, claim=self.token, status=JobStatus.RUNNING).update(
            status=JobStatus.DONE, finished_at=timezone.now(), items=items, outcome=outcome
        )
        if not done:
            raise JobLost(f"job {self.job_id} is no longer claimed by this run")


def _lease() -> timedelta:
    return timedelta(seconds=job_settings().lease_s)


@cache
def _upsert_statement() -> str:
    """One INSERT of every job of a session that returns each job's row, new or already recorded (the no-op
    update of its name on a conflict is what makes PostgreSQL return an existing row)."""
    fields = SessionJob._meta.concrete_fields
    columns = ", ".join(f'"{f.column}"' for f in fields)
    values = ", ".join("(" + ", ".join(["%s"] * len(fields)) + ")" for _ in JOB_TASKS)
    # Table and column names come from the model only; every value is a parameter.
    return (f'INSERT INTO "{SessionJob._meta.db_table}" AS j ({columns}) VALUES {values} '  # noqa: S608
            f'ON CONFLICT ("session_id", "name") DO UPDATE SET "name" = EXCLUDED."name" '
            f"RETURNING {select_list(JOB_ALIAS)}")


def _jobs_upsert(session: Session) -> list[SessionJob]:
    jobs = [SessionJob(session=session, user_id=session.user_id, name=name) for name in JOB_TASKS]
    params = [value for job in jobs for value in db_values(job, SessionJob._meta.concrete_fields).values()]
    with connection.cursor() as cursor:
        cursor.execute(_upsert_statement(), params)
        rows = cursor.fetchall()
    return [cast(SessionJob, instances(row, JOB_ALIAS)["j"]) for row in rows]


def session_jobs_schedule(*, session: Session) -> list[SessionJob]:
    """Records the extract and autoskill jobs of `session` (idempotent) and sends them once the caller commits."""
    # One statement: a repeat records nothing twice and gets the rows recorded before.
    jobs = sorted(_jobs_upsert(session), key=lambda job: list(JOB_TASKS).index(job.name))
    pending = [job for job in jobs if job.status == JobStatus.PENDING]
    # Sent from the sender thread once the rows are committed: the close answers without the broker's round trips.
    transaction.on_commit(lambda: send_soon(_job_messages(pending), op="jobs.enqueue_failed"))
    return jobs


def _mark_sent(job_ids: list[uuid.UUID]) -> None:
    """Stamps the jobs as sent in one statement whose commit does not wait for the WAL flush: a stamp lost in a
    crash only makes the sweep send the job again, which its claim turns into one run."""
    table = SessionJob._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f'{relaxed_prefix()}UPDATE "{table}" SET "enqueued_at" = %s WHERE "id" = ANY(%s)',  # noqa: S608
                       [timezone.now(), job_ids])


def _send(job_ids: list[uuid.UUID]) -> int:
    jobs = list(SessionJob.objects.filter(id__in=job_ids).only("id", "name", "session_id"))
    return send_quick(_job_messages(jobs), op="jobs.enqueue_failed")


def _job_messages(jobs: list[SessionJob]) -> list[Message]:
    # A broker outage leaves the rows pending (never fails the caller); the requeue task sends them later.
    # The jobs are stamped sent together once the last message went out; after a partial send the sweep sends
    # them all again (the claim makes a repeat a no-op).
    last, ids = len(jobs) - 1, [job.id for job in jobs]
    marks = [partial(_mark_sent, ids) if n == last else no_mark for n in range(len(jobs))]
    return [Message(JOB_TASKS[job.name], (str(job.session_id),), mark) for job, mark in zip(jobs, marks, strict=True)]


def session_jobs_requeue(*, now: datetime | None = None) -> int:
    """Sends again every job that never reached the broker, waits too long, or whose worker died mid-run."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=job_settings().requeue_after_s)
    due = SessionJob.objects.filter(
        Q(status=JobStatus.PENDING, enqueued_at__isnull=True)
        | Q(status=JobStatus.PENDING, enqueued_at__lt=stale)
        | Q(status=JobStatus.RUNNING, claimed_at__lt=now - _lease())
    )
    ids = list(due.values_list("id", flat=True)[:500])
    sent = _send(ids) if ids else 0
    if ids:
        log_op(logger, "jobs.requeue", due=len(ids), sent=sent)
    return sent


def job_claim(*, session: Session, name: str, now: datetime | None = None) -> Claim | None:
    """Takes the job for this run (a pending row, or a running one whose lease ran out); None when done or taken."""
    now = now or timezone.now()
    job, _ = SessionJob.objects.get_or_create(session=session, name=name, defaults={"user_id": session.user_id})
    token = uuid.uuid4()
    taken = SessionJob.objects.filter(id=job.id).filter(
        Q(status=JobStatus.PENDING) | Q(status=JobStatus.RUNNING, claimed_at__lt=now - _lease())
    ).update(status=JobStatus.RUNNING, claim=token, claimed_at=now, attempts=F("attempts") + 1)
    return Claim(job.id, token) if taken else None


def job_release(*, claim: Claim, failed: bool) -> None:
    """Gives the job back (pending, for a retry) or marks it failed after the last attempt."""
    status = JobStatus.FAILED if failed else JobStatus.PENDING
    SessionJob.objects.filter(id=claim.job_id, claim=claim.token).update(
        status=status, claim=None, outcome="error" if failed else "", enqueued_at=timezone.now()
    )


def session_job_run(*, session_id: str, name: str, work: Callable[[Session, Claim], int], final: bool = False) -> str:
    """Runs one job for a session exactly once and logs its outcome line (kea.extract / autoskill.run).

    A failure gives the claim back and raises TransientJobError for the caller's retry; on the `final`
    attempt the job is marked failed instead."""
    op = JOB_OPS[name]
    try:
        uuid.UUID(str(session_id))
    except ValueError:
        raise ValidationFailed(f"session id must be a UUID; got {session_id!r}") from None
    session = Session.objects.filter(id=session_id).select_related("user", "project").first()
    if session is None:
        log_op(logger, op, sessionId=str(session_id)[:8], outcome="skipped_session_gone", items=0)
        return "skipped_session_gone"
    claim = job_claim(session=session, name=name)
    if claim is None:
        log_op(logger, op, sessionId=str(session_id)[:8], outcome="skipped_already_done", items=0)
        return "skipped_already_done"
    try:
        items = work(session, claim)
    except JobLost:
        log_op(logger, op, sessionId=str(session_id)[:8], outcome="skipped_claim_lost", items=0)
        return "skipped_claim_lost"
    except Exception as exc:
        job_release(claim=claim, failed=final)
        log_op(logger, op, level=logging.WARNING, sessionId=str(session_id)[:8], outcome="error", items=0,
               reason=f"{type(exc).__name__}: {str(exc)[:200]}", final=final)
        if final:
            return "error"
        raise TransientJobError(str(exc)) from exc
    log_op(logger, op, sessionId=str(session_id)[:8], outcome="ok", items=items)
    return "ok"
