"""A bounded queue drained by one daemon thread per process: work a request hands off once it has committed
(vectors to embed, broker messages to send), so the request answers without waiting for it."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

Item = TypeVar("Item")


class ProcessQueue(Generic[Item]):
    """The queue and its thread are made on first use and again after a fork: a forked child inherits the
    parent's queue object but no thread behind it. `drain(queue)` runs forever on the thread and calls `done`
    for every item it took."""

    def __init__(self, name: str, maxsize: int, drain: Callable[[queue.Queue[Item]], None]) -> None:
        self.name, self.maxsize, self.drain = name, maxsize, drain
        self.lock = threading.Lock()
        self.pid = 0
        self.queue: queue.Queue[Item] = queue.Queue(maxsize=maxsize)

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
        """Marks `count` items handled; an idle thread holds no database connection (a test database must be
        droppable, and an idle web process should not keep one open for nothing)."""
        from django.db import connections

        if self.queue.empty():
            connections.close_all()
        for _ in range(count):
            self.queue.task_done()

    def flush(self, timeout: float) -> bool:
        """Waits until every queued item has been handled; True when it was in time."""
        deadline = time.monotonic() + timeout
        while self.pid == os.getpid() and self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.pid != os.getpid() or not self.queue.unfinished_tasks
