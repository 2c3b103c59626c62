"""How busy this process is with requests, for background work that can wait for a pause between them.

The vector batchers (`knowledge.services.vector_batcher`) embed rows and insert them into the vector indexes on a
thread of the web process. That work costs as much CPU as the requests themselves (a short text's vector 2-6 ms of
one core, an HNSW insert 1-4 ms), and on two cores it slowed the requests it ran beside even at lowered priority:
one client's session open at 100,000 rows took 2-4 ms longer when the report's new rule was embedded during it
(docs/benchmarks.md, issue 17, thirtieth pass). So a batcher holds a gathered batch until no request of its
process has run for a moment, within a bound that keeps vectors searchable well within a second.

Every request the WSGI application serves is counted (`activity_counted`, outermost in `brain.wsgi`), from the
call until the application returns its answer. Processes that serve none (workers, commands) are always quiet.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from brain.body_guard import StartResponse, WsgiApp


class RequestActivity:
    """The requests this process is serving now, and when the last one ended (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._last_end = float("-inf")

    def begin(self) -> None:
        with self._lock:
            self._running += 1

    def end(self) -> None:
        with self._lock:
            self._running -= 1
            self._last_end = time.monotonic()

    def quiet_for(self, seconds: float) -> bool:
        """True when no request is running and none has ended in the last `seconds`."""
        with self._lock:
            return self._running == 0 and time.monotonic() - self._last_end >= seconds


REQUESTS = RequestActivity()


def activity_counted(app: WsgiApp) -> WsgiApp:
    """`app` with every call counted in `REQUESTS`, an answer that fails included."""

    def counted(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        REQUESTS.begin()
        try:
            return app(environ, start_response)
        finally:
            REQUESTS.end()

    return counted
