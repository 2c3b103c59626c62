"""The per-request database health check runs at most once a second per connection (brain/pg_backend/base.py).

A connection is killed for real (pg_terminate_backend from a second connection). Past the window the health
check notices before the request's first query and reconnects, so the request is served; inside it the
request answers the retryable "database unavailable" and the dead connection is dropped, so the next request
is served. Nothing is mocked; the window's age is set on the connection instead of slept through."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client

from mcpgw.models import McpSession
from projects.models import ApiToken
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}


def _initialize(raw: str) -> Any:
    # What the WSGI handler does at every request start (request_started); the test client leaves it out.
    connection.close_if_unusable_or_obsolete()
    headers = {"Authorization": f"Bearer {raw}", "Accept": "application/json, text/event-stream"}
    return Client().post("/mcp", INITIALIZE, content_type="application/json", headers=headers)


def _kill_our_backend() -> int:
    """Terminates the server process behind Django's connection from a second connection; returns its pid."""
    pid = connection.connection.info.backend_pid
    params = {k: v for k, v in connection.get_connection_params().items() if k != "context"}
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return int(pid)


@pytest.fixture
def checked(settings: Any) -> Iterator[None]:
    settings.BRAIN_DB_CONNECT_WAIT_S = 0.0
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update({"CONN_HEALTH_CHECKS": True, "CONN_MAX_AGE": 60})
    yield
    connection.close()  # the test leaves no half-dead connection to the database flush
    connection.settings_dict.update(saved)


def _sessions_of(tenant: Tenant) -> int:
    return McpSession.objects.filter(token__in=ApiToken.objects.filter(user=tenant.user)).count()


def test_past_the_window_a_dead_connection_is_replaced_before_the_request(
        checked: None, tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert _initialize(tenant_a.user_raw).status_code == 200
    killed = _kill_our_backend()
    connection._verified_at -= 5.0  # type: ignore[attr-defined]  # older than HEALTH_CHECK_EVERY_S
    response = _initialize(tenant_a.user_raw)
    assert response.status_code == 200, response.content
    assert connection.connection.info.backend_pid != killed
    assert _sessions_of(tenant_a) == 2 and _sessions_of(tenant_b) == 0


def test_inside_the_window_one_request_is_refused_retryably_and_the_next_is_served(
        checked: None, tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert _initialize(tenant_a.user_raw).status_code == 200
    killed = _kill_our_backend()
    refused = _initialize(tenant_a.user_raw)  # checked under a second ago: trusted, and found dead by the query
    assert refused.status_code == 503 and refused.json()["error"]["data"]["retryable"] is True
    served = _initialize(tenant_a.user_raw)
    assert served.status_code == 200, served.content
    assert connection.connection.info.backend_pid != killed
    assert _sessions_of(tenant_a) == 2 and _sessions_of(tenant_b) == 0
