"""Session ends over MCP while the broker is unreachable: the close answers normally, and its jobs run exactly
once after the broker comes back (a real redis-server started on the port that was closed, a real worker).

Both ends are covered: brain_report_session_outcome on /mcp (extraction and autoskill jobs) and
cognibrain_session_end with runDreamIfDue on /mcp/cognibrain (the dream cycle's evolution, decay and
cross-session jobs).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from brain.broker import sends_flush
from brain.celery import app
from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem
from sessions.models import JobStatus, Session, SessionJob
from sessions.services.dream import dream_runs_requeue
from sessions.services.jobs import session_jobs_requeue
from tests.conftest import Tenant
from tests.mcpgw.conftest import Cog, Mcp, call_tool
from tests.sessions.test_jobs_worker import sending_to, wait_for, worker
from tests.support.proc import free_port

pytestmark = pytest.mark.django_db(transaction=True)
CORRECTION = "Never use Formik in this repo, we use react-hook-form with zod for every form."


@contextmanager
def redis_on(port: int) -> Iterator[None]:
    argv = [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.terminate()
        process.wait()


def _ok(mcp: Mcp, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = call_tool(mcp, name, args)
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


def _logged(tmp_path: Path, needle: str) -> int:
    return sum(log.read_text(errors="replace").count(needle) for log in tmp_path.glob("worker-*.log"))


def test_report_outcome_with_the_broker_down_closes_and_its_jobs_run_once_it_is_back(
    tenant_a: Tenant, tenant_b: Tenant, client: Client, tmp_path: Path
) -> None:
    port = free_port()  # nothing listens here yet: every connection to the broker is refused
    mcp = Mcp(client, tenant_a.user_raw)
    with sending_to(f"redis://127.0.0.1:{port}/0"):
        started = _ok(mcp, "brain_start_session", {"clientType": "pytest", "prompt": "add a login form"})
        session_id = started["sessionId"]
        _ok(mcp, "brain_log_event", {"sessionId": session_id, "eventType": "user_correction",
                                     "payload": {"text": CORRECTION}})
        began = time.monotonic()
        closed = _ok(mcp, "brain_report_session_outcome", {"sessionId": session_id, "success": True})
        assert time.monotonic() - began < 30  # the close never waits out the broker's retry loop
        assert closed["sessionId"] == session_id and closed["alreadyClosed"] is False
        assert Session.objects.get(id=session_id).ended_at is not None
        assert sends_flush()  # the sender thread tried the broker (refused) and left the jobs pending
        jobs = SessionJob.objects.filter(session_id=session_id)
        assert {(j.name, j.status, j.enqueued_at) for j in jobs} == {
            ("extract", JobStatus.PENDING, None), ("autoskill", JobStatus.PENDING, None)}
        assert session_jobs_requeue() == 0  # beat's sweep while the broker is still down: nothing sent, nothing lost
        with redis_on(port), worker(f"redis://127.0.0.1:{port}/0", tmp_path):
            wait_for(lambda: session_jobs_requeue() == 2 or jobs.filter(enqueued_at__isnull=False).count() == 2,
                     "the sweep to send both jobs")
            wait_for(lambda: jobs.filter(status=JobStatus.DONE).count() == 2, "both jobs to finish")
            # The same messages once more (a sweep racing a send, a broker redelivery): the claim makes them no-ops.
            for task in ("sessions.tasks.session_extract", "sessions.tasks.session_autoskill"):
                app.send_task(task, args=[session_id])
            wait_for(lambda: _logged(tmp_path, "outcome=skipped_already_done") >= 2, "the repeats to be skipped")
    assert {(j.name, j.attempts) for j in jobs.all()} == {("extract", 1), ("autoskill", 1)}
    assert KnowledgeItem.objects.filter(owner=tenant_a.user, content=CORRECTION).count() == 1
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
    assert not SessionJob.objects.filter(user=tenant_b.user).exists()


def test_cognibrain_session_end_with_the_broker_down_queues_the_dream_once_it_is_back(
    tenant_a: Tenant, tenant_b: Tenant, client: Client, tmp_path: Path
) -> None:
    port = free_port()
    cog = Cog(client, tenant_a.user_raw)
    with sending_to(f"redis://127.0.0.1:{port}/0"):
        _ok(cog, "cognibrain_context", {"task": "fix the web build", "repo": "acme/web"})
        _ok(cog, "cognibrain_memory_add", {"content": "Never edit dist/** (vite output); edit src/ instead"})
        ended = _ok(cog, "cognibrain_session_end", {"runDreamIfDue": True})
        assert ended["closed"] is True and ended["dreamQueued"] is True
        assert sends_flush()  # the sender thread tried the broker (refused) and left the run pending
        run = DreamRun.objects.get(owner=tenant_a.user)
        assert (run.enqueued_at, run.evolved_at, run.decayed_at, run.crossed_at) == (None, None, None, None)
        assert dream_runs_requeue() == 0  # still down
        with redis_on(port), worker(f"redis://127.0.0.1:{port}/0", tmp_path):
            wait_for(lambda: dream_runs_requeue() == 3 or _run(run).enqueued_at is not None, "the sweep to send")
            wait_for(lambda: None not in _stamps(run), "evolution, decay and cross-session work of the run")
            stamps = _stamps(run)
            assert dream_runs_requeue() == 0  # finished runs are never sent again
            for task in ("knowledge.tasks.evolve_scope", "knowledge.tasks.decay_scope",
                         "sessions.tasks.cross_session_dream"):
                app.send_task(task, args=[run.scope, run.created_at.isoformat(), str(run.id)])
            wait_for(lambda: _logged(tmp_path, "outcome=skipped_already_done") >= 3, "the repeats to be skipped")
    assert _stamps(run) == stamps
    assert _logged(tmp_path, "op=dream.job") == 6 and _logged(tmp_path, "outcome=ok") == 3
    assert not DreamRun.objects.filter(owner=tenant_b.user).exists()


def _run(run: DreamRun) -> DreamRun:
    return DreamRun.objects.get(pk=run.pk)


def _stamps(run: DreamRun) -> tuple[object, ...]:
    fresh = _run(run)
    return fresh.evolved_at, fresh.decayed_at, fresh.crossed_at
