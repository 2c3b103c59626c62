"""A bounded queue drained by one daemon thread per process: work a request hands off once it has committed
(vectors to embed, broker messages to send), so the request answers without waiting for it."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
# A drain thread keeps its database connection while work keeps coming and closes it once it has waited this long
# for more: an idle web process holds no connection for nothing, and a steady stream of writes does not pay a new
# PostgreSQL connection per item (closing whenever the queue ran empty opened about 1.5 a round of the session
# loop of `brain bench tools`; docs/benchmarks.md, issue 17, twelfth pass).
IDLE_CLOSE_S = 2.0


def next_item(pending: queue.Queue[Item]) -> Item:
    """The next queued item, for a drain function; a thread that has waited IDLE_CLOSE_S for it first closes its
    database connections."""
    try:
        return pending.get(timeout=IDLE_CLOSE_S)
    except queue.Empty:
        from django.db import connections

        connections.close_all()
        return pending.get()


_QUEUES: list[ProcessQueue[Any]] = []  # every queue this process made (`flush_all`)


def flush_all(timeout: float) -> bool:
    """Waits until every queue of this process has handled what it holds, within `timeout` seconds in all; True
    when all were in time. A command calls it before it stops the database its queues' threads write to."""
    deadline = time.monotonic() + timeout
    drained = [pending.flush(max(0.0, deadline - time.monotonic())) for pending in list(_QUEUES)]  # each one
    return all(drained)


class ProcessQueue(Generic[Item]):
    """The queue and its thread are made on first use and again after a fork: a forked child inherits the
    parent's queue object but no thread behind it. `drain(queue)` runs forever on the thread and calls `done`
    for every item it took."""

    def __init__(self, name: str, maxsize: int, drain: Callable[[queue.Queue[Item]], None]) -> None:
        self.name, self.maxsize, self.drain = name, maxsize, drain
        self.lock = threading.Lock()
        self.pid = 0
        self.queue: queue.Queue[Item] = queue.Queue(maxsize=maxsize)
        _QUEUES.append(self)

    def put(self, item: Item) -> bool:
        """Queues `item`; False when the queue is full (the caller decides what a refusal means)."""
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    self.queue = queue.Queue(maxsize=self.maxsize)
                    threading.Thread(target=self.drain, args=(self.queue,), name=self.name, daemon=True).start()
                    self.pid = os.getpid()
        try:
            self.queue.put_nowait(item)
        except queue.Full:
            return False
        return True

    def done(self, count: int = 1) -> None:
        """Marks `count` items handled (the drain thread closes its connection once idle: `next_item`)."""
        for _ in range(count):
            self.queue.task_done()

    def flush(self, timeout: float) -> bool:
        """Waits until every queued item has been handled; True when it was in time."""
        deadline = time.monotonic() + timeout
        while self.pid == os.getpid() and self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.pid != os.getpid() or not self.queue.unfinished_tasks
