"""A web request that arrives while PostgreSQL restarts waits for it (BRAIN_DB_CONNECT_WAIT_S) and is served.

The restart is played by a TCP port that refuses connections for a second, then forwards them to the real
test database, as a server coming back on its address would. Nothing is mocked."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import Tenant
from tests.support.proc import database_at, free_port

pytestmark = pytest.mark.django_db(transaction=True)
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}


def _upstream(db: dict[str, Any]) -> socket.socket:
    host, port = db.get("HOST") or "/tmp", int(db.get("PORT") or 5432)
    if str(host).startswith("/"):
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(f"{host}/.s.PGSQL.{port}")
        return sock
    return socket.create_connection((str(host), port))


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


@contextmanager
def database_back_after(port: int, delay_s: float) -> Iterator[None]:
    """Nothing listens on `port` for `delay_s`; then it forwards every connection to the test database."""
    stop = threading.Event()
    real = dict(connection.settings_dict)  # read before the test points the connection at `port`

    def serve() -> None:
        time.sleep(delay_s)
        with socket.socket() as server:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
            server.listen()
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    client, _ = server.accept()
                except TimeoutError:
                    continue
                upstream = _upstream(real)
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def _initialize(raw: str) -> Any:
    headers = {"Authorization": f"Bearer {raw}", "Accept": "application/json, text/event-stream"}
    return Client().post("/mcp", INITIALIZE, content_type="application/json", headers=headers)


def test_a_request_during_a_restart_waits_and_is_served(tenant_a: Tenant, settings: Any,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    settings.BRAIN_DB_CONNECT_WAIT_S = 10.0
    assert _initialize(tenant_a.user_raw).status_code == 200  # imports done: the timed part is the database's
    port = free_port()
    with database_back_after(port, delay_s=1.5), database_at(port):
        response = _initialize(tenant_a.user_raw)
    assert response.status_code == 200, response.content
    assert response.json()["result"]["serverInfo"]["name"]
    waited = [r.op_fields for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "db.connect_waited"]
    assert waited and waited[0]["tries"] > 1


def test_without_the_wait_the_same_request_answers_retry(tenant_a: Tenant, settings: Any) -> None:
    settings.BRAIN_DB_CONNECT_WAIT_S = 0.0
    port = free_port()
    with database_back_after(port, delay_s=3.0), database_at(port):
        response = _initialize(tenant_a.user_raw)
    assert response.status_code == 503 and response.json()["error"]["data"]["retryable"] is True
