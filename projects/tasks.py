"""Periodic housekeeping of the accounts app."""

from __future__ import annotations

import logging

from celery import shared_task

from brain.logs import log_op
from projects.services.idempotency import idempotency_keys_purge

logger = logging.getLogger("projects")


@shared_task(name="projects.purge_expired")
def purge_expired() -> int:
    """Hourly (beat): delete expired idempotency keys; logs how many."""
    keys = idempotency_keys_purge()
    log_op(logger, "purge.expired", idempotencyKeys=keys)
    return keys
