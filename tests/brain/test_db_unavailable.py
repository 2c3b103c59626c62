"""While the database is unreachable every interface answers "retry shortly" in its own format: /mcp a
JSON-RPC error with data.retryable and HTTP 503 + Retry-After, /api/v1 the 503 envelope, /readyz 503.

The database is made really unreachable (the connection points at a closed port), nothing is mocked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from tests.conftest import Tenant
from tests.support.proc import database_at, free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def database_down() -> Iterator[None]:
    with database_at(free_port()):
        yield


def test_every_interface_answers_retry_while_the_database_is_down(tenant_a: Tenant, database_down: None) -> None:
    headers = {"Authorization": f"Bearer {tenant_a.user_raw}", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 7, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    mcp = Client().post("/mcp", body, content_type="application/json", headers=headers)
    assert mcp.status_code == 503 and mcp["Retry-After"] == "2"
    error = mcp.json()["error"]
    assert error["data"] == {"retryable": True, "retryAfterSeconds": 2} and "Retry in 2 s" in error["message"]
    rest = Client().post("/api/v1/knowledge", {"rule": "x"}, content_type="application/json",
                         headers={"Authorization": f"Bearer {tenant_a.user_raw}", "Idempotency-Key": "k1"})
    assert rest.status_code == 503 and rest["Retry-After"] == "2"
    assert rest.json()["error"]["code"] == "UNAVAILABLE" and rest.json()["error"]["details"]["retryable"] is True
    listing = Client().get("/api/v1/knowledge", headers={"Authorization": f"Bearer {tenant_a.user_raw}"})
    assert listing.status_code == 503 and listing.json()["error"]["code"] == "UNAVAILABLE"
    ready = Client().get("/readyz")
    assert ready.status_code == 503 and ready["Retry-After"] == "2" and ready.json()["status"] == "unavailable"


def test_the_answers_are_normal_again_once_it_is_back(tenant_a: Tenant) -> None:
    ready = Client().get("/readyz")
    assert ready.status_code == 200 and not ready.has_header("Retry-After")
