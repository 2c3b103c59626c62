"""`brain bench jobs`: extraction yield and single-worker throughput on scripted sessions.

Each session is built from one rule set of ../shared/data/awesome_cursorrules.jsonl: its description is
the prompt and up to two of its directive bullets ("always", "never", "use", "don't") become the user's
corrections. Extraction runs in this process, as one solo worker would, in the configured mode
(heuristic unless a model and key are set). The bench user and everything it created are deleted after."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from brain.bench.scale import CORPUS_HINT, DEFAULT_CORPUS

HELP = "measure extraction yield (kept rules, merged duplicates) and extract throughput per worker"
_DIRECTIVE = re.compile(r"^\s*[-*]\s+(.*\b(always|never|use|don'?t|do not|prefer|avoid)\b.*)$", re.IGNORECASE)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--data", type=Path, default=DEFAULT_CORPUS, help="awesome_cursorrules.jsonl")
    parser.add_argument("--worker", action="store_true",
                        help="also run the jobs through the broker with a real worker (2 processes) and time them")


def scripted_sessions(path: Path, count: int) -> list[dict[str, Any]]:
    """Prompt and corrections per rule set, in file order."""
    scripted = []
    for line in path.read_text().splitlines()[:count]:
        record = json.loads(line)
        text = record["text"]
        match = re.search(r'description:\s*"?([^"\n]+)', text)
        bullets = [m.group(1).strip() for m in map(_DIRECTIVE.match, text.splitlines()) if m][:2]
        scripted.append({"prompt": match.group(1) if match else record["rule_set"], "corrections": bullets})
    return scripted


def _closed(user: Any, project: Any, script: dict[str, Any]) -> Any:
    from django.utils import timezone

    from sessions.models import Session
    from sessions.services.events import EventDraft, session_events_log_many, session_start

    session = session_start(user=user, project=project, prompt=script["prompt"])
    drafts = [EventDraft("user_correction", text) for text in script["corrections"]]
    if drafts:
        session_events_log_many(session=session, drafts=drafts)
    Session.objects.filter(id=session.id).update(ended_at=timezone.now(), success=True)
    session.refresh_from_db()
    return session


def _measure(user: Any, project: Any, scripted: list[dict[str, Any]]) -> dict[str, Any]:
    from sessions.services.extraction import extract_session

    yielded, created, merged, durations = 0, 0, 0, []
    for script in scripted:
        session = _closed(user, project, script)
        started = time.perf_counter()
        result = extract_session(session, None)
        durations.append(time.perf_counter() - started)
        yielded += 1 if result.created or result.merged else 0
        created, merged = created + len(result.created), merged + len(result.merged)
    return {"sessions": len(scripted), "sessionsWithKeptRule": yielded, "rulesCreated": created,
            "duplicatesMerged": merged, "extractP50Ms": round(statistics.median(durations) * 1000, 1),
            "extractP95Ms": round(statistics.quantiles(durations, n=20)[-1] * 1000, 1),
            "sessionsPerSecondPerWorker": round(len(durations) / sum(durations), 2)}


def _wait_done(session_ids: list[Any]) -> None:
    from sessions.models import JobStatus, SessionJob

    pending = SessionJob.objects.filter(session_id__in=session_ids).exclude(
        status__in=(JobStatus.DONE, JobStatus.FAILED))
    while pending.exists() or SessionJob.objects.filter(session_id__in=session_ids).count() < 2 * len(session_ids):
        time.sleep(0.1)


def _through_worker(user: Any, project: Any, scripted: list[dict[str, Any]]) -> dict[str, Any]:
    """Extract + autoskill of every session through the broker and one worker (prefork, 2 processes)."""
    from django.db import transaction

    from sessions.services.jobs import session_jobs_schedule

    argv = [sys.executable, "-m", "celery", "-A", "brain", "worker", "--concurrency", "2", "--loglevel", "WARNING"]
    worker = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        warm = _closed(user, project, scripted[0])
        with transaction.atomic():
            session_jobs_schedule(session=warm)
        _wait_done([warm.id])  # worker up, embedder loaded
        sessions = [_closed(user, project, script) for script in scripted]
        started = time.perf_counter()
        for session in sessions:
            with transaction.atomic():
                session_jobs_schedule(session=session)
        _wait_done([s.id for s in sessions])
        elapsed = time.perf_counter() - started
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=15)
        except subprocess.TimeoutExpired:  # a warm shutdown can hang on the filesystem transport
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    return {"workerJobs": 2 * len(sessions), "workerSeconds": round(elapsed, 2),
            "workerJobsPerSecond": round(2 * len(sessions) / elapsed, 2)}


def run(args: argparse.Namespace) -> int:
    from knowledge.embeddings import embed_texts
    from knowledge.llm import configured_model
    from projects.services.accounts import project_ensure_named, user_create

    if not args.data.is_file():
        print(f"brain: need --data FILE (got {args.data}): {CORPUS_HINT}", file=sys.stderr)
        return 2
    scripted = scripted_sessions(args.data, args.sessions)
    embed_texts(["warm up the embedder so the first session does not pay for loading it"])
    user = user_create(email=f"bench-jobs-{uuid.uuid4().hex[:8]}@example.invalid")
    try:
        project, _ = project_ensure_named(user=user, name="bench jobs")
        figures = {"mode": configured_model(), **_measure(user, project, scripted)}
        if args.worker:
            from django.conf import settings

            figures.update(broker=settings.CELERY_BROKER_URL.split("://")[0],
                           **_through_worker(user, project, scripted))
    finally:
        user.delete()  # cascades to its org, project, sessions and knowledge
    print(json.dumps(figures, indent=2))
    return 0
