"""The session jobs through a real broker and a real Celery worker process.

The machine's Redis (127.0.0.1:6379, database 14 so other workers on db 0 never take our messages), and
for the outage test a private redis-server that the test stops and starts again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from brain.broker import sends_flush
from brain.celery import app
from brain.db_url import connection_url
from knowledge.models import KnowledgeItem
from sessions.models import JobStatus, Session, SessionJob
from sessions.services.events import session_event_log, session_start
from sessions.services.jobs import session_jobs_requeue
from sessions.services.outcome import OutcomeReport, session_report_outcome
from tests.conftest import Tenant
from tests.support.fake_llm import FakeLlm, fake_llm_server
from tests.support.proc import free_port

REDIS_URL = "redis://127.0.0.1:6379/14"
CORRECTION = "Never use Formik in this repo, we use react-hook-form with zod for every form."
FINDINGS = ('{"findings": [{"type": "recipe", "trigger": "when adding a Django model field", "rule": '
            '"run makemigrations and commit the migration with the model change", "confidence": 0.9}]}')
pytestmark = pytest.mark.django_db(transaction=True)
_LLM_VARS = ("KEA_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DASHSCOPE_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture(autouse=True)
def empty_queue() -> None:
    """Database 14 is this file's: drop messages a previous (failed) run may have left."""
    redis.Redis.from_url(REDIS_URL).flushdb()


def _reset_producers() -> None:
    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def sending_to(url: str) -> Iterator[None]:
    """Points this process's Celery producer at `url` (tests run with the filesystem broker otherwise)."""
    old_url, old_options = app.conf.broker_url, app.conf.broker_transport_options
    app.conf.broker_url, app.conf.broker_transport_options = url, {}
    _reset_producers()
    try:
        yield
    finally:
        sends_flush(timeout=60)  # what the block's closes queued goes to its broker
        app.conf.broker_url, app.conf.broker_transport_options = old_url, old_options
        _reset_producers()


@contextmanager
def worker(url: str | None, tmp_path: Path, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker process; `url` None = no REDIS_URL, i.e. the filesystem broker in the data dir."""
    child_env = {k: v for k, v in os.environ.items() if k not in (*_LLM_VARS, "REDIS_URL")}
    child_env.update(DATABASE_URL=connection_url(), BRAIN_LOG_LEVEL="INFO", **env)
    if url:
        child_env["REDIS_URL"] = url
    log = (tmp_path / f"worker-{time.monotonic_ns()}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "brain", "worker", "--pool", "solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
        env=child_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()


def wait_for(condition: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.2)


def _job(session: Session) -> SessionJob:
    return SessionJob.objects.get(session=session, name="extract")


def _close_with_correction(tenant: Tenant, prompt: str = "add a login form") -> Session:
    session = session_start(user=tenant.user, project=tenant.project, prompt=prompt)
    session_event_log(session=session, event_type="user_correction", content=CORRECTION)
    session_report_outcome(principal=tenant.principal, session_id=str(session.id),
                           report=OutcomeReport(success=True))
    return session


def test_closed_session_yields_knowledge_through_redis_and_a_worker(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path
) -> None:
    with sending_to(REDIS_URL), worker(REDIS_URL, tmp_path):
        session = _close_with_correction(tenant_a)
        assert sends_flush() and _job(session).enqueued_at is not None
        wait_for(lambda: _job(session).status == JobStatus.DONE, "the extract job")
        wait_for(lambda: SessionJob.objects.get(session=session, name="autoskill").status == JobStatus.DONE,
                 "the autoskill job")
    row = KnowledgeItem.objects.get(owner=tenant_a.user)
    assert (row.type, row.content) == ("anti_principle", CORRECTION)
    assert _job(session).attempts == 1
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_worker_killed_mid_task_then_restarted_yields_exactly_one_result(tenant_a: Tenant, tmp_path: Path) -> None:
    with fake_llm_server(FakeLlm(reply=FINDINGS, delay_s=30)) as fake, sending_to(REDIS_URL):
        env = {"KEA_MODEL": "gpt-4o-mini", "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": f"{fake.url}/v1",
               "BRAIN_LLM_MAX_ATTEMPTS": "1", "BRAIN_JOBS_LEASE_S": "1"}
        with worker(REDIS_URL, tmp_path, **env) as first:
            session = _close_with_correction(tenant_a, prompt="add a field to the invoice model")
            wait_for(lambda: len(fake.requests) == 1, "the worker to call the model")
            os.killpg(first.pid, signal.SIGKILL)  # dies holding the claim, before writing anything
            first.wait()
        assert _job(session).status == JobStatus.RUNNING and not KnowledgeItem.objects.exists()
        fake.delay_s = 0
        with worker(REDIS_URL, tmp_path, **env):
            time.sleep(1.1)  # let the 1 s lease of the dead worker's claim run out
            with override_settings(BRAIN_JOBS={**settings.BRAIN_JOBS, "lease_s": 1}):
                assert session_jobs_requeue() >= 1
            wait_for(lambda: _job(session).status == JobStatus.DONE, "the re-sent extract job")
    assert KnowledgeItem.objects.filter(owner=tenant_a.user, type="recipe").count() == 1
    assert _job(session).attempts == 2 and _job(session).items == 1


def test_close_succeeds_with_the_broker_down_and_the_job_runs_when_it_returns(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    argv = [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no"]
    with sending_to(url):
        # The broker is down: the close commits, the job stays pending in the database.
        session = _close_with_correction(tenant_a)
        assert Session.objects.get(id=session.id).ended_at is not None
        assert (_job(session).status, _job(session).enqueued_at) == (JobStatus.PENDING, None)
        assert session_jobs_requeue() == 0  # still down: nothing sent, nothing lost
        redis = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        try:
            with worker(url, tmp_path):
                wait_for(lambda: session_jobs_requeue() == 2 or _job(session).enqueued_at is not None,
                         "the broker to come back")
                wait_for(lambda: _job(session).status == JobStatus.DONE, "the extract job")
        finally:
            redis.terminate()
            redis.wait()
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1
    assert _job(session).attempts == 1


def test_the_serverless_broker_of_brain_serve_runs_the_same_jobs(tenant_a: Tenant, tmp_path: Path) -> None:
    assert app.conf.broker_url.startswith("filesystem")  # tests run without REDIS_URL, like a laptop install
    with worker(None, tmp_path):
        session = _close_with_correction(tenant_a)
        wait_for(lambda: _job(session).status == JobStatus.DONE, "the extract job")
    assert KnowledgeItem.objects.filter(owner=tenant_a.user, content=CORRECTION).count() == 1
