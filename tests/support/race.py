"""Two writers interleaved on purpose: the first one's write is made and left uncommitted while the second runs,
then committed. What a race test needs to turn "two requests at once" into one deterministic order."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connection, transaction


def while_uncommitted(first: Callable[[], object], second: Callable[[], object], *,
                      wait: float = 0.5) -> list[BaseException]:
    """Runs `first` in a transaction left open while `second` runs in another thread for `wait` seconds (it
    reads what is committed, then blocks on the first one's locks), then commits the first and lets both end.
    Returns what either raised, in the order raised; each thread closes its own database connection."""
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def run(body: Callable[[], object]) -> None:
        try:
            body()
        except BaseException as exc:  # the caller's assertions name it
            errors.append(exc)
        finally:
            connection.close()

    def hold() -> None:
        with transaction.atomic():
            first()
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=run, args=(hold,))
    holder.start()
    assert inside.wait(10), errors
    racer = threading.Thread(target=run, args=(second,))
    racer.start()
    racer.join(wait)
    release.set()
    holder.join(10)
    racer.join(10)
    return errors
