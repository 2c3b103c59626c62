"""Vectors off the request path: a write commits its row (full-text included) at once and hands the row's id
to an in-process batcher, whose thread embeds whatever has queued up in one batch and stores the vectors.

The queue is bounded: when it is full an id is dropped (logged) and its row simply keeps a NULL vector,
as it does when the process dies with ids still queued. Those rows are found again by the periodic
backfill (`knowledge.services.backfill`, run by the Celery beat task `embed_pending_rows` and by
`brain embeddings backfill`), so an accepted write is never lost and always gets its vector eventually.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import close_old_connections, connections, transaction

from brain.db_priority import lower_backend_priority
from brain.logs import log_failure, log_op
from brain.process_queue import ProcessQueue, next_item
from brain.request_activity import REQUESTS
from knowledge.embeddings import BACKGROUND_NICE, EmbeddingUnavailable, embed_texts, lower_thread_priority
from knowledge.services.backfill import Target
from knowledge.services.vector_store import rows_without_vectors, vectors_store

logger = logging.getLogger("knowledge")
QUEUE_MAX = 10_000
BATCH_MAX = 64
GATHER_SECONDS = 0.02  # how long the thread waits for more ids once one arrived: batches form under load
# Then it keeps gathering until its process has served no request for QUIET_SECONDS, for at most QUIET_WAIT_SECONDS
# after the first id (brain/request_activity.py): one client's open at 100,000 rows took 2-4 ms less on two cores
# (docs/benchmarks.md, issue 17, thirtieth pass). A full batch leaves at once, so a backlog never waits.
QUIET_SECONDS = 0.002
QUIET_WAIT_SECONDS = 0.25


@dataclass
class VectorBatcher:
    """One queue and one daemon thread per process and target table (`brain.process_queue`)."""

    target: Target
    queue_max: int = QUEUE_MAX
    quiet_wait: float = QUIET_WAIT_SECONDS
    # Runs in the batcher's thread on the ids of each batch once their vectors are stored (e.g. a merge of
    # near-duplicates, which needs the vector the request did not wait for).
    after: Callable[[list[Any]], object] | None = None
    _ids: ProcessQueue[Any] = field(init=False)

    def __post_init__(self) -> None:
        self._ids = ProcessQueue(f"vectors-{self.target.label}", self.queue_max, self._run)

    def submit_after_commit(self, ids: list[Any]) -> None:
        """Queues `ids` once the current transaction commits (at once outside one)."""
        if ids:
            transaction.on_commit(lambda: self.submit(ids))

    def submit(self, ids: list[Any]) -> None:
        for pk in ids:
            if not self._ids.put(pk):
                log_op(logger, "vectors.queue_full", level=logging.WARNING, table=self.target.label,
                       dropped=len(ids), note="the backfill will embed them")
                return

    def flush(self, timeout: float = 30.0) -> bool:
        """Waits until every queued id has been processed; True when the queue drained in time."""
        return self._ids.flush(timeout)

    def _gather(self, pending: queue.Queue[Any]) -> list[Any]:
        """The next batch: the first id and those that follow it within GATHER_SECONDS, and then until the process
        is between requests (or `quiet_wait` has passed), up to BATCH_MAX."""
        ids = [next_item(pending)]
        started = time.monotonic()
        while len(ids) < BATCH_MAX:
            waited = time.monotonic() - started
            if waited >= GATHER_SECONDS and (waited >= self.quiet_wait or REQUESTS.quiet_for(QUIET_SECONDS)):
                break
            with contextlib.suppress(queue.Empty):  # no id yet: look at the requests again
                ids.append(pending.get(timeout=max(QUIET_SECONDS, GATHER_SECONDS - waited)))
        return ids

    def _run(self, pending: queue.Queue[Any]) -> None:
        # Below the request threads: under load an event is acknowledged first and embedded with what CPU is left
        # (the queue absorbs the backlog; the backfill takes what overflows it).
        lower_thread_priority()
        while True:
            ids = self._gather(pending)
            try:
                close_old_connections()
                lower_backend_priority(connections["default"], BACKGROUND_NICE)
                embed_rows(self.target, ids, background=True)
                if self.after is not None:
                    self.after(ids)
            except EmbeddingUnavailable as exc:
                log_op(logger, "vectors.embed_failed", level=logging.WARNING, table=self.target.label,
                       count=len(ids), reason=str(exc)[:200])
            except Exception as exc:  # a database hiccup must not kill the thread; the backfill catches up
                log_failure(logger, "vectors.batch_failed", exc, table=self.target.label, count=len(ids))
                connections.close_all()
            finally:
                self._ids.done(len(ids))


def embed_rows(target: Target, ids: list[Any], *, background: bool = False) -> int:
    """Embeds the rows among `ids` that still have no vector, in one batch; returns how many were stored.
    `background`: on the embedder for work nobody waits on (`knowledge.embeddings.get_embedder`)."""
    rows = rows_without_vectors(target, ids)
    if not rows:
        return 0
    vectors, model = embed_texts([row.text or " " for row in rows], background=background)
    return vectors_store(target, rows, vectors, model)
