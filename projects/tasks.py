"""Periodic housekeeping of the accounts app."""

from __future__ import annotations

import logging

from celery import shared_task

from brain.logs import log_op
from projects.services.idempotency import idempotency_keys_purge
from projects.services.throttle import login_throttles_purge

logger = logging.getLogger("projects")


@shared_task(name="projects.purge_expired")
def purge_expired() -> int:
    """Hourly (beat): delete expired idempotency keys and stale sign-in/sign-up throttle rows; logs how many."""
    keys = idempotency_keys_purge()
    throttles = login_throttles_purge()
    log_op(logger, "purge.expired", idempotencyKeys=keys, throttleRows=throttles)
    return keys + throttles
