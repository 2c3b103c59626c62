"""A drain thread's database connection: kept while items keep coming, closed once the thread has been idle."""

from __future__ import annotations

import queue
import threading
import time

import pytest
from django.db import connection

from brain import process_queue
from brain.process_queue import ProcessQueue, next_item
from projects.models import User
from tests.conftest import Tenant


def _backend_alive(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row and row[0])


@pytest.mark.django_db(transaction=True)
def test_a_drain_thread_keeps_its_connection_while_busy_and_closes_it_when_idle(
    monkeypatch: pytest.MonkeyPatch, tenant_a: Tenant, tenant_b: Tenant,
) -> None:
    monkeypatch.setattr(process_queue, "IDLE_CLOSE_S", 0.5)
    seen: list[tuple[int, int]] = []  # (PostgreSQL backend of the thread's connection, users it could count)
    handled = threading.Event()

    def drain(pending: queue.Queue[str]) -> None:
        while True:
            email = next_item(pending)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pid = cursor.fetchone()[0]  # type: ignore[index]
            seen.append((pid, User.objects.filter(email=email).count()))
            handled.set()
            drained.done()

    drained: ProcessQueue[str] = ProcessQueue("test-drain", 10, drain)

    def handle(email: str) -> None:
        handled.clear()
        assert drained.put(email)
        assert handled.wait(10)

    for _ in range(3):  # items closer together than the idle time share one connection
        handle(tenant_a.user.email)
        time.sleep(0.1)
    assert len({pid for pid, _ in seen}) == 1 and _backend_alive(seen[0][0])
    deadline = time.monotonic() + 10
    while _backend_alive(seen[0][0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _backend_alive(seen[0][0]), "an idle drain thread still holds its connection"
    handle(tenant_b.user.email)  # after the idle close the next item connects again and is handled
    assert seen[-1][0] != seen[0][0] and [count for _, count in seen] == [1, 1, 1, 1]
