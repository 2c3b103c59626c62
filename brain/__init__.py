"""External Brain: project package (settings, urls, Celery app, CLI, embedded database)."""

from brain.celery import app as celery_app

__all__ = ["celery_app"]
