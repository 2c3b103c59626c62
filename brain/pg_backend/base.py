"""Django's PostgreSQL backend that keeps trying to connect for `BRAIN_DB_CONNECT_WAIT_S` seconds.

A PostgreSQL restart (failover, upgrade, `pg_ctl restart`) refuses connections for a second or two. Without
a wait, every request that arrives in that gap fails although the database is back moments later; with it,
such a request waits and is served. Only requests in flight when the server went away (their transaction
was cut) still fail, with the retryable "database unavailable" answer. 0 (the default outside web
replicas) connects once, as Django does.

Timestamps are read by psycopg's C loader instead of Django's, which is a Python subclass of psycopg's Python
loader: it parsed every timestamptz of a row in Python, an eighth of a `brain_list_projects` call's time in the
web worker. Both give the same aware datetime in UTC, because Django sets each connection's TimeZone to UTC (its
own loader relies on that too: it replaces the zone, it does not convert).

It also spares the hot path Django's per-request health check (CONN_HEALTH_CHECKS): a `SELECT 1` before the
first query of every request, a third round trip on a two-statement tool call. A connection that was opened
or checked less than HEALTH_CHECK_EVERY_S ago is trusted; under steady traffic each connection is checked
about once a second instead of once a request. If the server died within that second, the request fails
like a request in flight during the restart (a retryable "database unavailable"), and the connection is
dropped at the end of it (Django's errors_occurred check), so the next one reconnects.
"""

from __future__ import annotations

import datetime
import logging
import time
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base
from psycopg.types.datetime import TimestamptzLoader

from brain.logs import log_op

logger = logging.getLogger(__name__)
RETRY_EVERY_S = 0.25
HEALTH_CHECK_EVERY_S = 1.0


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

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = super().create_cursor(name)
        if self.timezone == datetime.UTC:
            # psycopg registers its C loader in place of the Python class it is given (3 µs a cursor).
            cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
        return cursor

    _verified_at = 0.0  # monotonic time the connection was last opened or answered a health check

    def connect(self) -> None:
        super().connect()
        self._verified_at = time.monotonic()

    def close_if_health_check_failed(self) -> None:
        # Django's own attributes (django-stubs does not declare them).
        enabled, done = getattr(self, "health_check_enabled", False), getattr(self, "health_check_done", False)
        due = self.connection is not None and enabled and not done
        if due and time.monotonic() - self._verified_at < HEALTH_CHECK_EVERY_S:
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
        if due and self.connection is not None:
            self._verified_at = time.monotonic()
