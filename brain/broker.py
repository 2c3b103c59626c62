"""Sending Celery messages from a request without ever waiting on, or failing because of, a dead broker.

The work to do is always recorded in the database first (an outbox row committed with the request); the
message is only a wake-up call. So a send here tries once on a short-lived connection and reports how far
it got; whatever was not sent stays pending in its row for a beat sweep to send once the broker is back.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from celery import current_app

from brain.logs import log_op
from brain.process_queue import ProcessQueue, next_item

logger = logging.getLogger(__name__)

# The pooled connection retries for seconds; a caller waiting on an HTTP answer must not. One retry at once,
# then give up: a refused connection fails in well under a second.
QUICK_OPTIONS = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


@dataclass(frozen=True)
class Message:
    task: str
    args: tuple[str, ...]
    on_sent: Callable[[], None]  # marks the outbox row as sent (only called once the broker took the message)


def no_mark() -> None:
    """The `on_sent` of a message whose outbox row is stamped by a later message of the same send."""


class _Link:
    """This process's connection for quick sends, opened on first use and kept: a new broker connection per
    request cost more than the sends on it (about 5 of a session close's 18 ms). One lock serialises the
    sends of a process's threads; a fork, or a broker URL changed at run time, gets its own connection."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connection: Any = None
        self.key: tuple[int, str] = (0, "")

    def get(self) -> tuple[Any, bool]:
        """(connection, whether it was opened now)."""
        key = (os.getpid(), str(current_app.conf.broker_url))
        if self.connection is not None and self.key == key:
            return self.connection, False
        self.drop()
        options = {**(current_app.conf.broker_transport_options or {}), **QUICK_OPTIONS}
        self.connection, self.key = current_app.connection_for_write(transport_options=options), key
        return self.connection, True

    def drop(self) -> None:
        if self.connection is not None and self.key[0] == os.getpid():  # never a parent's socket
            with suppress(Exception):
                self.connection.release()
        self.connection = None


_LINK = _Link()


def _send(messages: Sequence[Message]) -> int:
    """Sends in order on the kept connection; a kept connection that fails (the broker restarted since) is
    replaced once and the rest sent on the new one. Raises when a fresh connection fails too."""
    sent = 0
    while True:
        connection, fresh = _LINK.get()
        try:
            for message in messages[sent:]:
                current_app.send_task(message.task, args=list(message.args), retry=False, connection=connection)
                sent += 1
            return sent
        except Exception:
            _LINK.drop()
            if fresh:
                raise


def send_quick(messages: Sequence[Message], *, op: str) -> int:
    """Sends `messages` in order; stops at the first broker failure and returns how many went out, each marked
    sent (`on_sent`) once the broker took it. Never raises for a broker failure (it is logged as `op=<op>`)."""
    sent, error = 0, None
    with _LINK.lock:
        try:
            sent = _send(messages)
        except Exception as exc:  # the request already committed: nothing here may fail it
            error = exc
    try:
        for message in messages[:sent]:
            message.on_sent()
    except Exception as exc:  # the message then goes out twice (the sweep), which the job's claim makes one run
        error = error or exc
    if error is not None:
        log_op(logger, op, level=logging.WARNING, sent=sent, pending=len(messages) - sent,
               reason=f"{type(error).__name__}: {str(error)[:200]}")
    return sent


# Messages waiting for the sender thread; past this many a send happens on the caller's thread (never dropped).
SOON_QUEUE_MAX = 1000


def _send_queued(pending: queue.Queue[tuple[Sequence[Message], str]]) -> None:
    from django.db import close_old_connections, connections

    while True:
        messages, op = next_item(pending)
        try:
            close_old_connections()
            send_quick(messages, op=op)  # logs and swallows broker failures; `on_sent` stamps rows
        except Exception as exc:  # a stamp that failed: the sweep sends again, which the claim makes one run
            log_op(logger, op, level=logging.WARNING, reason=f"{type(exc).__name__}: {str(exc)[:200]}")
            connections.close_all()
        finally:
            _SENDER.done()


# This process's sender: a request answers once its rows commit, not after the broker's round trips too.
_SENDER: ProcessQueue[tuple[Sequence[Message], str]] = ProcessQueue("broker-sender", SOON_QUEUE_MAX, _send_queued)


def send_soon(messages: Sequence[Message], *, op: str) -> None:
    """`send_quick` on this process's sender thread: for messages whose work is already recorded in committed
    rows, so a process that dies before sending loses nothing (the rows stay pending for the sweep). A full
    queue sends on the caller's thread."""
    if messages and not _SENDER.put((messages, op)):
        send_quick(messages, op=op)


def sends_flush(timeout: float = 30.0) -> bool:
    """Waits until this process's sender thread has sent what was queued; True when it did in time."""
    return _SENDER.flush(timeout)
