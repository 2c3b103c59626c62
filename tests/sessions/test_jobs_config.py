"""The beat schedule and task options, read from configuration (nothing sleeps), and `brain jobs run`."""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from celery.schedules import crontab
from django.utils import timezone

from brain.broker import sends_flush
from brain.celery import app
from brain.errors import ValidationFailed
from knowledge.models import KnowledgeItem
from knowledge.services.create import KnowledgeDraft, knowledge_create
from sessions.cli import jobs as cli_jobs
from sessions.models import JobStatus, Session, SessionJob
from sessions.services.jobs import (
    JOB_TASKS,
    Claim,
    TransientJobError,
    session_job_run,
    session_jobs_requeue,
    session_jobs_schedule,
)
from sessions.tasks import session_autoskill, session_extract
from tests.conftest import Tenant
from tests.support.closed_session import closed_session


def test_beat_schedule_has_every_job_at_its_time() -> None:
    schedule = app.conf.beat_schedule
    assert schedule["jobs-requeue"]["task"] == "sessions.tasks.session_jobs_requeue"
    assert schedule["jobs-requeue"]["schedule"] == 60.0
    nightly = {name: schedule[name]["schedule"] for name in
               ("knowledge-decay", "knowledge-evolution", "cross-session-extract", "knowledge-scope-rows")}
    assert nightly == {"knowledge-decay": crontab(hour=2, minute=0),
                       "knowledge-evolution": crontab(hour=2, minute=30),
                       "cross-session-extract": crontab(hour=3, minute=0),
                       "knowledge-scope-rows": crontab(hour=3, minute=30)}
    vectors = {name: (schedule[name]["task"], schedule[name]["schedule"])
               for name in ("embed-pending-events", "embed-pending-knowledge")}
    assert vectors == {"embed-pending-events": ("sessions.tasks.embed_pending_events", 60.0),
                       "embed-pending-knowledge": ("knowledge.tasks.embed_pending_knowledge", 60.0)}
    app.loader.import_default_modules()
    assert {entry["task"] for entry in schedule.values()} <= set(app.tasks)


def test_session_tasks_ack_late_and_retry_with_a_cap() -> None:
    for task in (session_extract, session_autoskill):
        assert task.acks_late and task.reject_on_worker_lost
        assert task.max_retries == 5 and task.retry_backoff_max == 300


def _args(**values: str | None) -> argparse.Namespace:
    return argparse.Namespace(**{"as_of": None, "scope": None, "session": None, **values})


@pytest.mark.django_db
def test_jobs_run_decay_by_hand(tenant_a: Tenant, tenant_b: Tenant, capsys: pytest.CaptureFixture[str]) -> None:
    draft = KnowledgeDraft(content="keep migrations small and reversible", trigger="when migrating")
    item = knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=draft)
    bobs = knowledge_create(owner=tenant_b.user, project=tenant_b.project, draft=draft)
    as_of = datetime(2026, 6, 1, tzinfo=UTC)
    KnowledgeItem.objects.filter(id__in=[item.id, bobs.id]).update(last_used_at=as_of - timedelta(days=900))
    assert cli_jobs.run(_args(job="decay", as_of="2026-06-01", scope=f"project:{tenant_a.project.id}")) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["asOf"] == "2026-06-01T00:00:00+00:00"
    assert output["scopes"][f"project:{tenant_a.project.id}"]["retired"] == 1
    assert KnowledgeItem.objects.get(id=item.id).decay_score == 0.05
    assert KnowledgeItem.objects.get(id=bobs.id).decay_score == 1.0  # another scope: untouched
    with pytest.raises(ValidationFailed, match="project:<uuid>"):
        cli_jobs.run(_args(job="decay", scope="everything"))
    with pytest.raises(ValidationFailed, match="ISO 8601"):
        cli_jobs.run(_args(job="evolution", as_of="yesterday"))
    with pytest.raises(ValidationFailed, match="--session"):
        cli_jobs.run(_args(job="extract"))
    with pytest.raises(ValidationFailed, match="must be a UUID"):
        cli_jobs.run(_args(job="autoskill", session="yesterday's"))


@pytest.mark.django_db
def test_a_failing_job_gives_its_claim_back_then_fails_on_the_last_attempt(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project)
    other = closed_session(user=tenant_b.user, project=tenant_b.project)

    def broken(_session: Session, _claim: Claim | None) -> int:
        raise RuntimeError("provider exploded")

    with pytest.raises(TransientJobError, match="provider exploded"):
        session_job_run(session_id=str(session.id), name="extract", work=broken)
    job = SessionJob.objects.get(session=session, name="extract")
    assert (job.status, job.claim, job.attempts) == (JobStatus.PENDING, None, 1)
    assert session_job_run(session_id=str(session.id), name="extract", work=broken, final=True) == "error"
    job.refresh_from_db()
    assert (job.status, job.outcome, job.attempts) == (JobStatus.FAILED, "error", 2)
    assert session_job_run(session_id=str(uuid.uuid4()), name="extract", work=broken) == "skipped_session_gone"
    assert not SessionJob.objects.filter(session=other).exists()


@pytest.mark.django_db
def test_requeue_sends_only_lost_jobs(tenant_a: Tenant) -> None:
    now = timezone.now()
    jobs = {}
    for name in ("never_sent", "sent_long_ago", "sent_just_now", "dead_worker", "live_worker", "done"):
        session = closed_session(user=tenant_a.user, project=tenant_a.project, prompt=name)
        jobs[name] = SessionJob.objects.create(session=session, user=tenant_a.user, name="extract")
    SessionJob.objects.filter(id=jobs["sent_long_ago"].id).update(enqueued_at=now - timedelta(minutes=5))
    SessionJob.objects.filter(id=jobs["sent_just_now"].id).update(enqueued_at=now)
    SessionJob.objects.filter(id=jobs["dead_worker"].id).update(status=JobStatus.RUNNING,
                                                                 claimed_at=now - timedelta(minutes=11))
    SessionJob.objects.filter(id=jobs["live_worker"].id).update(status=JobStatus.RUNNING, claimed_at=now)
    SessionJob.objects.filter(id=jobs["done"].id).update(status=JobStatus.DONE)
    assert session_jobs_requeue(now=now) == 3  # the filesystem broker of the test data dir takes them
    resent = set(SessionJob.objects.filter(enqueued_at__gt=now).values_list("session__prompt", flat=True))
    assert resent == {"never_sent", "sent_long_ago", "dead_worker"}


@pytest.mark.django_db(transaction=True)
def test_scheduling_again_returns_the_recorded_jobs_and_sends_only_pending_ones(tenant_a: Tenant,
                                                                               tenant_b: Tenant) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project, prompt="repeat")
    first = session_jobs_schedule(session=session)
    assert [job.name for job in first] == list(JOB_TASKS) and sends_flush()
    SessionJob.objects.filter(session=session, name="autoskill").update(status=JobStatus.DONE, enqueued_at=None)
    SessionJob.objects.filter(session=session, name="extract").update(enqueued_at=None)
    again = session_jobs_schedule(session=session)  # one statement: recorded rows come back as they are
    assert [(job.id, job.name, job.status) for job in again] == [
        (first[0].id, "extract", JobStatus.PENDING), (first[1].id, "autoskill", JobStatus.DONE)]
    assert SessionJob.objects.filter(session=session).count() == 2 and sends_flush()
    sent = dict(SessionJob.objects.filter(session=session).values_list("name", "enqueued_at"))
    assert sent["extract"] is not None and sent["autoskill"] is None  # the done job was not sent again
    assert not SessionJob.objects.filter(user=tenant_b.user).exists()
