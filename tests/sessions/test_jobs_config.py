"""The beat schedule and task options, read from configuration (nothing sleeps), and `brain jobs run`."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta

import pytest
from celery.schedules import crontab

from brain.celery import app
from brain.errors import ValidationFailed
from knowledge.models import KnowledgeItem
from knowledge.services import KnowledgeDraft, knowledge_create
from sessions import cli_jobs
from sessions.tasks import session_autoskill, session_extract
from tests.conftest import Tenant


def test_beat_schedule_has_every_job_at_its_time() -> None:
    schedule = app.conf.beat_schedule
    assert schedule["jobs-requeue"]["task"] == "sessions.tasks.session_jobs_requeue"
    assert schedule["jobs-requeue"]["schedule"] == 60.0
    nightly = {name: schedule[name]["schedule"] for name in
               ("knowledge-decay", "knowledge-evolution", "cross-session-extract")}
    assert nightly == {"knowledge-decay": crontab(hour=2, minute=0),
                       "knowledge-evolution": crontab(hour=2, minute=30),
                       "cross-session-extract": crontab(hour=3, minute=0)}
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
