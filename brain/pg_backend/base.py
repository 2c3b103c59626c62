"""Django's PostgreSQL backend that keeps trying to connect for `BRAIN_DB_CONNECT_WAIT_S` seconds.

A PostgreSQL restart (failover, upgrade, `pg_ctl restart`) refuses connections for a second or two. Without
a wait, every request that arrives in that gap fails although the database is back moments later; with it,
such a request waits and is served. Only requests in flight when the server went away (their transaction
was cut) still fail, with the retryable "database unavailable" answer. 0 (the default outside web
replicas) connects once, as Django does.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base

from brain.logs import log_op

logger = logging.getLogger(__name__)
RETRY_EVERY_S = 0.25


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        deadline = time.monotonic() + float(getattr(settings, "BRAIN_DB_CONNECT_WAIT_S", 0.0))
        tries = 0
        while True:
            tries += 1
            try:
                connection = super().get_new_connection(conn_params)
            except psycopg.OperationalError:
                if time.monotonic() + RETRY_EVERY_S > deadline:
                    raise
                time.sleep(RETRY_EVERY_S)
                continue
            if tries > 1:
                log_op(logger, "db.connect_waited", tries=tries)
            return connection
