"""The dream cycle's three jobs (evolution, decay, cross-session) through the machine's Redis and a real worker:
each runs once per run, the cross-session job extracts the run owner's patterns, the other tenant gets nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from brain.celery import app
from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem
from knowledge.nightly import NightlyScope
from knowledge.services.create import KnowledgeDraft, knowledge_create
from sessions.services.dream import DREAM_TASKS, dream_queue_if_due, dream_runs_requeue
from tests.conftest import Tenant
from tests.sessions.test_jobs_worker import REDIS_URL, empty_queue, sending_to, wait_for, worker
from tests.support.closed_session import closed_session

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["empty_queue"]  # the autouse fixture that empties this file's Redis database
PRINT = ("Never use print for debugging output, we use the logging module.",
         "never use print for debugging output; we use the logging module")


def _logged(tmp_path: Path, needle: str) -> int:
    return sum(log.read_text(errors="replace").count(needle) for log in tmp_path.glob("worker-*.log"))


def _stamps(run: DreamRun) -> tuple[object, ...]:
    fresh = DreamRun.objects.get(pk=run.pk)
    return tuple(getattr(fresh, done) for _, done in DREAM_TASKS)


def test_a_dream_run_does_the_owners_cross_session_work_once(tenant_a: Tenant, tenant_b: Tenant,
                                                              tmp_path: Path) -> None:
    now = timezone.now()
    for day, text in enumerate(PRINT):  # the same correction in two closed sessions: a cross-session pattern
        closed_session(user=tenant_a.user, project=tenant_a.project, prompt=f"task {day}",
                       ended_at=now - timedelta(days=3 - day), events=[("user_correction", text, {})])
    closed_session(user=tenant_b.user, project=tenant_b.project, ended_at=now - timedelta(days=1),
                   events=[("user_correction", PRINT[0], {})])
    knowledge_create(owner=tenant_a.user, project=tenant_a.project,
                     draft=KnowledgeDraft(content="Keep the release notes in CHANGELOG.md", confidence=0.9))
    scope = NightlyScope(project_id=tenant_a.project.id, owner_id=None)
    with sending_to(REDIS_URL), worker(REDIS_URL, tmp_path):
        assert dream_queue_if_due(owner=tenant_a.user, scope=scope).due
        run = DreamRun.objects.get(owner=tenant_a.user)
        wait_for(lambda: None not in _stamps(run), "the run's three jobs")
        stamps = _stamps(run)
        assert dream_runs_requeue() == 0  # a finished run is never sent again
        app.send_task("sessions.tasks.cross_session_dream", args=[run.scope, run.created_at.isoformat(), str(run.id)])
        wait_for(lambda: _logged(tmp_path, "outcome=skipped_already_done") >= 1, "the repeat to be skipped")
    assert _stamps(run) == stamps
    assert _logged(tmp_path, "job=cross_session outcome=ok") == 1
    learned = KnowledgeItem.objects.filter(owner=tenant_a.user, tags__contains=["cross_session"])
    assert learned.count() == 1 and "print" in learned.get().content.lower()
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
    assert not DreamRun.objects.filter(owner=tenant_b.user).exists()
