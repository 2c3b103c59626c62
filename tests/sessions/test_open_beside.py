"""A session opened with a prompt is stored by a query thread on its own connection while the search runs
(sessions/services/open.py `_stored_beside`): committed rows, the record of what was injected, the caller's action
items, the second tenant's isolation, the caller's own transaction, and a thread connection the server dropped.
These tests commit (transaction=True): another connection cannot see a test transaction's rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.test import override_settings

import sessions.services.open as open_module
from brain.pg_backend.base import HEALTH_CHECK_EVERY_S
from brain.thread_pools import process_pool
from knowledge.services.teach import knowledge_teach
from sessions.models import ApplicationRole, Session, SessionEvent, SessionKnowledgeApplication
from sessions.services.open import STORE_THREADS, session_open
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)
PROMPT = "add a pydantic validator for the signup form"


@pytest.fixture
def insert_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of the thread each session INSERT of an open ran on (the real insert runs)."""
    names: list[str] = []
    real: Callable[..., Session] = open_module.session_insert

    def recorded(*args: Any, **kwargs: Any) -> Session:
        names.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(open_module, "session_insert", recorded)
    yield names


def _teach(tenant: Tenant) -> str:
    knowledge_teach(principal=tenant.principal, project_id=str(tenant.project.id), type="recipe",
                    trigger="deploying with docker compose", rule="run migrations in a one-off container")
    taught = knowledge_teach(principal=tenant.principal, project_id=str(tenant.project.id), type="reflex",
                             trigger="writing pydantic validators", rule="use field_validator with mode='after'")
    return str(taught.item.id)


def _item(tenant: Tenant, text: str) -> str:
    return str(knowledge_teach(principal=tenant.principal, type="action_item", rule=text,
                               project_id=str(tenant.project.id),
                               tags=["action-item", f"for:{tenant.user.email}"]).item.id)


def test_an_open_is_stored_beside_its_search(tenant_a: Tenant, tenant_b: Tenant, insert_threads: list[str]) -> None:
    validator = _teach(tenant_a)
    task = _item(tenant_a, "write the migration plan")
    opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert len(insert_threads) == 1 and insert_threads[0].startswith("open-store")
    assert opened.relevant_knowledge is not None and opened.relevant_knowledge.ids[0] == validator
    assert opened.open_action_items is not None and opened.open_action_items.ids == [task]
    # Committed: the rows are there for any connection, the record of what was injected with them.
    stored = Session.objects.get(id=opened.session.id)
    assert (stored.user_id, stored.project_id, stored.prompt) == (tenant_a.user.id, tenant_a.project.id, PROMPT)
    assert list(SessionEvent.objects.filter(session=stored).values_list("event_type", "content")) == [
        ("prompt", PROMPT)]
    applications = SessionKnowledgeApplication.objects.filter(session=stored)
    assert sorted(str(a.knowledge_id) for a in applications) == sorted(opened.relevant_knowledge.ids)
    assert {a.role for a in applications} == {ApplicationRole.INJECTED}
    # The second tenant: nothing of the first is injected, listed as its action item or recorded on its session.
    other = session_open(principal=tenant_b.principal, prompt=PROMPT)
    assert other.relevant_knowledge is None and other.open_action_items is None
    assert not SessionKnowledgeApplication.objects.filter(session_id=other.session.id).exists()
    assert Session.objects.filter(user=tenant_b.user).count() == 1


def test_an_open_inside_a_transaction_stays_in_it(tenant_a: Tenant, insert_threads: list[str]) -> None:
    _teach(tenant_a)
    with transaction.atomic():
        opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
        assert opened.relevant_knowledge is not None
        transaction.set_rollback(True)
    # Stored on the caller's connection, in its transaction: the rollback took the session with it.
    assert insert_threads == [threading.current_thread().name]
    assert not Session.objects.filter(id=opened.session.id).exists()


@override_settings(BRAIN_OPEN_STORE_BESIDE=False)
def test_switched_off_the_open_stores_after_its_search(tenant_a: Tenant, insert_threads: list[str]) -> None:
    validator = _teach(tenant_a)
    opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert insert_threads == [threading.current_thread().name]
    recorded = SessionKnowledgeApplication.objects.filter(session_id=opened.session.id).values_list("knowledge_id",
                                                                                                 flat=True)
    assert validator in {str(k) for k in recorded}


def test_a_thread_connection_the_server_dropped_is_replaced(tenant_a: Tenant, insert_threads: list[str]) -> None:
    _teach(tenant_a)
    for _ in range(3):
        session_open(principal=tenant_a.principal, prompt=PROMPT)
    with connection.cursor() as cursor:  # every other backend of this database: the query threads' among them
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        assert cursor.fetchone()[0] >= 1
    time.sleep(HEALTH_CHECK_EVERY_S + 0.1)  # a connection checked within this long is trusted (brain/pg_backend)
    opened = [session_open(principal=tenant_a.principal, prompt=PROMPT) for _ in range(3)]
    assert all(name.startswith("open-store") for name in insert_threads)
    assert Session.objects.filter(id__in=[o.session.id for o in opened]).count() == 3


def test_store_threads_let_their_connections_go_at_max_age_zero(tenant_a: Tenant) -> None:
    _teach(tenant_a)
    with connection.cursor() as cursor:  # the store threads' connections, opened under the default age, are dropped
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    time.sleep(HEALTH_CHECK_EVERY_S + 0.1)
    with _max_age(0):  # behind a pooler (docs/deploy.md): every connection is let go once its work is done
        opened = [session_open(principal=tenant_a.principal, prompt=PROMPT) for _ in range(3)]
    assert Session.objects.filter(id__in=[o.session.id for o in opened]).count() == 3
    assert _store_threads_connected() == [False] * STORE_THREADS


@contextmanager
def _max_age(seconds: int) -> Iterator[None]:
    """Connections opened inside take this CONN_MAX_AGE (each thread's connection reads the handler's settings)."""
    before = connections.settings[DEFAULT_DB_ALIAS]["CONN_MAX_AGE"]
    connections.settings[DEFAULT_DB_ALIAS]["CONN_MAX_AGE"] = seconds
    try:
        yield
    finally:
        connections.settings[DEFAULT_DB_ALIAS]["CONN_MAX_AGE"] = before


def _store_threads_connected() -> list[bool]:
    """Whether each store thread holds an open connection, asked on every one of them at once (a barrier keeps each
    question on its own thread)."""
    barrier = threading.Barrier(STORE_THREADS)

    def connected() -> bool:
        barrier.wait(timeout=30)
        return connections[DEFAULT_DB_ALIAS].connection is not None

    pool = process_pool("open-store", STORE_THREADS)
    return [future.result(timeout=60) for future in [pool.submit(connected) for _ in range(STORE_THREADS)]]
