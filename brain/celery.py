"""The Celery app. Broker comes from settings (Redis, or the filesystem transport in the data dir)."""

from __future__ import annotations

import os
import sys

from celery import Celery
from celery.schedules import crontab

from brain.config import env

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")

_module_path = list(sys.path)
app = Celery("brain")
# Celery's Django fix-up puts the working directory first on the module path, for projects run from their source
# tree. The brain is installed: a directory someone starts it from that holds a package named like one of ours
# (`projects/`, `sessions/`, ...) must not stand in for it (tests/brain/test_wheel_install.py starts it among such).
if sys.path and sys.path[0] == os.getcwd() and sys.path[:1] != _module_path[:1]:
    del sys.path[0]
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.beat_schedule = {
    # Background intelligence (docs/jobs.md). Nightly jobs fan out one task per scope with a fixed as_of.
    "jobs-requeue": {"task": "sessions.tasks.session_jobs_requeue",
                     "schedule": env.float("BRAIN_JOBS_REQUEUE_EVERY_S", default=60.0)},
    "knowledge-decay": {"task": "knowledge.tasks.nightly_decay", "schedule": crontab(hour=2, minute=0)},
    "knowledge-evolution": {"task": "knowledge.tasks.nightly_evolution", "schedule": crontab(hour=2, minute=30)},
    "cross-session-extract": {"task": "sessions.tasks.cross_session_daily", "schedule": crontab(hour=3, minute=0)},
    "knowledge-scope-rows": {"task": "knowledge.tasks.scope_rows_recount", "schedule": crontab(hour=3, minute=30)},
    "mcp-sweep-idle-sessions": {"task": "mcpgw.sweep_idle_sessions", "schedule": 300.0},
    "purge-expired": {"task": "projects.purge_expired", "schedule": 3600.0},
    "embed-pending-events": {"task": "sessions.tasks.embed_pending_events", "schedule": 60.0},
    "embed-pending-knowledge": {"task": "knowledge.tasks.embed_pending_knowledge", "schedule": 60.0},
}
app.autodiscover_tasks()
