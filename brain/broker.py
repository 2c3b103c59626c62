"""Sending Celery messages from a request without ever waiting on, or failing because of, a dead broker.

The work to do is always recorded in the database first (an outbox row committed with the request); the
message is only a wake-up call. So a send here tries once on a short-lived connection and reports how far
it got; whatever was not sent stays pending in its row for a beat sweep to send once the broker is back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from celery import current_app

from brain.logs import log_op

logger = logging.getLogger(__name__)

# The pooled connection retries for seconds; a caller waiting on an HTTP answer must not. One retry at once,
# then give up: a refused connection fails in well under a second.
QUICK_OPTIONS = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


@dataclass(frozen=True)
class Message:
    task: str
    args: tuple[str, ...]
    on_sent: Callable[[], None]  # marks the outbox row as sent (only called once the broker took the message)


def send_quick(messages: Sequence[Message], *, op: str) -> int:
    """Sends `messages` in order on one connection; stops at the first broker failure and returns how many
    went out. Never raises for a broker failure (it is logged as `op=<op>` with the reason)."""
    options = {**(current_app.conf.broker_transport_options or {}), **QUICK_OPTIONS}
    sent = 0
    try:
        with current_app.connection_for_write(transport_options=options) as connection:
            for message in messages:
                current_app.send_task(message.task, args=list(message.args), retry=False, connection=connection)
                message.on_sent()
                sent += 1
    except Exception as exc:  # the request already committed: nothing here may fail it
        # A broker failure leaves the rest pending; so does a database error marking a row as sent (the
        # message then goes out twice, which the job's claim turns into one run).
        log_op(logger, op, level=logging.WARNING, sent=sent, pending=len(messages) - sent,
               reason=f"{type(exc).__name__}: {str(exc)[:200]}")
    return sent
