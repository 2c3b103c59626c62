"""The embedded PostgreSQL under `brain serve`'s supervision: if its postmaster stops (killed, crashed,
stopped by hand) it is started again and the restart is logged (`op=db.restart`). Meanwhile the web
answers "retry shortly" (brain.errors.database_unavailable) and clients retry with idempotency keys."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from brain import embedded_db
from brain.errors import StartupError
from brain.logs import log_op

logger = logging.getLogger("brain.serve")
CHECK_EVERY_SECONDS = 1.0
RETRY_EVERY_SECONDS = 1.0  # a killed postmaster's backends need a moment to exit before a restart succeeds


class DatabaseWatch:
    """Called from the supervisor loop; cheap when the database runs (a pid check at most once a second)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.server = embedded_db.server_for(data_dir / "pg")
        self.down_since: float | None = None
        self.next_check = 0.0
        self.restarts = 0

    def tick(self) -> None:
        now = time.monotonic()
        if now < self.next_check:
            return
        self.next_check = now + CHECK_EVERY_SECONDS
        if embedded_db.is_running(self.server):
            return
        if self.down_since is None:
            self.down_since = now
            log_op(logger, "db.down", level=logging.WARNING, dataDir=str(self.data_dir))
        self._restart(now)

    def _restart(self, now: float) -> None:
        try:
            embedded_db.ensure_running(self.data_dir)
        except (StartupError, OSError) as exc:
            self.next_check = now + RETRY_EVERY_SECONDS
            log_op(logger, "db.restart_failed", level=logging.WARNING, error=str(exc)[:200])
            return
        self.restarts += 1
        down_ms = round((time.monotonic() - (self.down_since or now)) * 1000)
        self.down_since = None
        log_op(logger, "db.restart", downMs=down_ms, restarts=self.restarts)
        print(f"brain serve: the embedded database stopped; restarted it after {down_ms} ms", flush=True)
