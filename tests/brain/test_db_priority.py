"""A background thread's PostgreSQL backend is lowered only when it is a backend of a server on this machine: a pid
read from a connection to another host, or one that is not a PostgreSQL backend, is never touched."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from django.db import connections

from brain.db_priority import lower_backend_priority
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bystander() -> Iterator[int]:
    """A process of this machine that is not a PostgreSQL backend."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def _connection(host: str, pid: int) -> SimpleNamespace:
    """Stands in for a Django connection whose server reports `pid` from `host` (what psycopg's info says)."""
    info = SimpleNamespace(host=host, backend_pid=pid)
    return SimpleNamespace(ensure_connection=lambda: None, connection=SimpleNamespace(info=info))


@pytest.mark.parametrize("host", ["10.20.30.40", "db.example.com"])
def test_a_remote_servers_pid_is_left_alone(bystander: int, host: str) -> None:
    assert lower_backend_priority(_connection(host, bystander), 19) is False
    assert os.getpriority(os.PRIO_PROCESS, bystander) == os.getpriority(os.PRIO_PROCESS, 0)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "/run/postgresql"])
def test_a_local_pid_that_is_no_postgres_backend_is_left_alone(bystander: int, host: str) -> None:
    assert lower_backend_priority(_connection(host, bystander), 19) is False
    assert os.getpriority(os.PRIO_PROCESS, bystander) == os.getpriority(os.PRIO_PROCESS, 0)


def test_a_local_backend_is_lowered_and_never_raised(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """The test database's own server runs here: a fresh connection's backend is lowered; asked for less, it stays."""
    connection = connections.create_connection("default")
    try:
        connection.ensure_connection()
        pid = connection.connection.info.backend_pid
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0) < 19
        assert lower_backend_priority(connection, 19) is True
        assert os.getpriority(os.PRIO_PROCESS, pid) == 19
        assert lower_backend_priority(connection, 10) is True  # a smaller nice is not a raise
        assert os.getpriority(os.PRIO_PROCESS, pid) == 19
        with connection.cursor() as cursor:  # the connection still serves, scoped as ever
            cursor.execute("SELECT count(*) FROM knowledge_knowledgeitem WHERE owner_id = %s", [tenant_b.user.pk])
            assert cursor.fetchone() == (0,)
    finally:
        connection.close()
