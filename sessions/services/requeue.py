"""Staff re-queue of a session's background jobs (after a fix, or a job that failed for good)."""

from __future__ import annotations

import logging

from django.db import transaction

from brain.logs import log_op
from sessions.models import JobStatus, Session, SessionJob
from sessions.services.jobs import session_jobs_schedule

logger = logging.getLogger(__name__)


def session_extraction_requeue(*, session: Session) -> int:
    """Puts the session's finished or failed extract job back to pending and sends it; the claim protocol
    still guarantees one result per run. Returns how many jobs were reset (0 when one is already queued)."""
    if session.ended_at is None:
        return 0
    with transaction.atomic():
        reset = SessionJob.objects.filter(session=session, name="extract").exclude(
            status__in=[JobStatus.PENDING, JobStatus.RUNNING]
        ).update(status=JobStatus.PENDING, claim=None, enqueued_at=None, outcome="")
        session_jobs_schedule(session=session)
    log_op(logger, "jobs.requeue_manual", sessionId=str(session.id)[:8], reset=reset)
    return reset
