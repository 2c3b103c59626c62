"""Celery tasks of the sessions app. They take ids, claim their row, and only then retry.

Closing a session: call `sessions.services.jobs.session_jobs_schedule(session=...)` inside the close transaction
(it records both jobs and sends these tasks after commit). Sending the tasks directly also works: a task
without a job row creates and claims one, so nothing runs twice either way.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from sessions.services.jobs import TransientJobError, session_job_run, session_jobs_requeue

_RETRY: dict[str, Any] = {
    "bind": True, "acks_late": True, "reject_on_worker_lost": True, "max_retries": 5,
    "retry_backoff": 5, "retry_backoff_max": 300, "retry_jitter": True,
}


@shared_task(name="sessions.tasks.session_extract", **_RETRY)
def session_extract(self: Task, session_id: str) -> str:
    """Mine or refine one closed session's learnings into knowledge (KEA)."""
    from sessions.services.extraction import extract_work

    return _run(self, session_id, "extract", extract_work)


@shared_task(name="sessions.tasks.session_autoskill", **_RETRY)
def session_autoskill(self: Task, session_id: str) -> str:
    """Turn one closed session's corrections and approvals into proposals awaiting approval."""
    from sessions.services.autoskill import autoskill_work

    return _run(self, session_id, "autoskill", autoskill_work)


@shared_task(name="sessions.tasks.cross_session_dream", acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(Exception,), max_retries=3, retry_backoff=30, retry_backoff_max=600, retry_jitter=True)
def cross_session_dream(scope: str, as_of: str, run_id: str) -> str:
    """The dream cycle's third job: the cross-session extract of the run's owner, once per run."""
    from knowledge.services.dream_runs import dream_job_run
    from sessions.services.cross_session import cross_session_dream as work

    del scope, as_of  # the run row holds both; the arguments match the other dream tasks
    return dream_job_run(run_id=run_id, job="cross_session",
                         work=lambda run, _, at: work(owner_id=run.owner_id, as_of=at))


@shared_task(name="sessions.tasks.session_jobs_requeue", acks_late=True)
def requeue_pending() -> int:
    """Beat, every minute: send again jobs (session jobs, dream runs) the broker never got or whose worker died."""
    from sessions.services.dream import dream_runs_requeue

    return session_jobs_requeue() + dream_runs_requeue()


@shared_task(name="sessions.tasks.cross_session_daily", acks_late=True)
def cross_session_daily(as_of: str | None = None) -> int:
    """Beat, daily: one cross-session extract per user with enough new closed sessions."""
    from sessions.services.cross_session import cross_session_run_all

    return cross_session_run_all(as_of=as_of)


@shared_task(name="sessions.tasks.embed_pending_events", acks_late=True)
def embed_pending_events() -> int:
    """Beat, every minute: vectors for logged events whose in-process batcher never ran (crash, full queue)."""
    from sessions.services.event_vectors import event_vectors_backfill

    return event_vectors_backfill()


def _run(task: Task, session_id: str, name: str, work: Any) -> str:
    final = task.request.retries >= (task.max_retries or 0)
    try:
        return session_job_run(session_id=session_id, name=name, work=work, final=final)
    except TransientJobError as exc:
        raise task.retry(exc=exc) from exc
