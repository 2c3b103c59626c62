"""The Celery app. Broker comes from settings (Redis, or the filesystem transport in the data dir)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")

app = Celery("brain")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.beat_schedule = {}
app.autodiscover_tasks()
