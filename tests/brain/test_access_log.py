"""`brain serve`'s access line: the app writes one structured `op=http.access` line per request, except for the MCP
calls the gateway logs itself (a POST to /mcp answered 2xx). Run under granian as `brain serve` starts it, against
this run's database, with a second tenant's token beside the first."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain.access_log import access_logged
from brain.db_url import connection_url
from tests.conftest import Tenant
from tests.support.proc import free_port, wait_listening, web_server_argv
from tests.support.status_wsgi import application as status_app

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    port, log = free_port(), tmp_path / "web.log"
    env = {**os.environ, "DATABASE_URL": connection_url()}
    with log.open("w") as sink:
        proc = subprocess.Popen(web_server_argv("granian", port), env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_listening(port, proc)
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _call(port: int, path: str, body: dict[str, Any] | None = None, token: str = "") -> int:
    headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def _access_lines(log: Path) -> list[tuple[str, str, str]]:
    """The access lines written so far, in the order they were written."""
    fields = [dict(part.split("=", 1) for part in line.split() if "=" in part)
              for line in log.read_text().splitlines() if "op=http.access" in line]
    return [(f["method"], f["path"], f["status"]) for f in fields]


def test_answered_mcp_posts_leave_no_access_line_everything_else_one(
        served: tuple[int, Path], tenant_a: Tenant, tenant_b: Tenant) -> None:
    port, log = served
    before = len(_access_lines(log))  # anything logged before the test's own requests
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    assert _call(port, "/mcp", initialize, tenant_a.user_raw) == 200
    assert _call(port, "/mcp", initialize, tenant_b.user_raw) == 200
    assert _call(port, "/mcp", initialize) == 401
    assert _call(port, "/healthz") == 200
    assert _call(port, "/api/v1/projects", token=tenant_b.user_raw) == 200
    time.sleep(0.5)  # the worker writes its lines as it answers; let the last one reach the file
    assert _access_lines(log)[before:] == [("POST", "/mcp", "401"), ("GET", "/healthz", "200"),
                                           ("GET", "/api/v1/projects", "200")]
    assert log.read_text().count("op=mcp.session.open") == 2  # the gateway's own line for each answered call


def test_the_wrapper_times_and_skips_in_process(caplog: pytest.LogCaptureFixture) -> None:
    app = access_logged(status_app)
    caplog.set_level(logging.INFO, logger="brain.http")
    for method, query in (("POST", "status=202"), ("POST", "status=401"), ("GET", "")):
        environ = {"REQUEST_METHOD": method, "PATH_INFO": "/mcp", "QUERY_STRING": query}
        assert list(app(environ, lambda status, headers, exc_info=None: None)) == [query[-3:].encode() or b"200"]
    lines = [record.getMessage() for record in caplog.records if "op=http.access" in record.getMessage()]
    assert [line.split(" ms=")[0] for line in lines] == [
        "op=http.access method=POST path=/mcp status=401", "op=http.access method=GET path=/mcp status=200"]
    assert all(float(line.split(" ms=")[1]) >= 0 for line in lines)


def test_secret_links_are_logged_without_their_secret(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """A password reset's token, a sign-up check's token and an invitation's key are credentials: whoever reads the
    log must not be able to follow the link. The route stays readable."""
    from brain.access_log import secret_free
    from brain.gunicorn_log import AccessLogger

    secrets = {
        "/accounts/password/reset/MQ/cn1x2a-0f3c9d8e7b6a5/": "/accounts/password/reset/MQ/***/",
        "/accounts/password/reset/MQ/set-password/": "/accounts/password/reset/MQ/set-password/",
        "/accounts/signup/verify/MQ/cn1x2a-0f3c9d8e7b6a5/": "/accounts/signup/verify/MQ/***/",
        "/invitations/Zm9vYmFyLXNlY3JldC1rZXk/": "/invitations/***/",
        "/orgs/acme/invitations/5f0c8a52-53f4-4c8e-9a43-2f7a0d1b9c11/revoke": (
            "/orgs/acme/invitations/5f0c8a52-53f4-4c8e-9a43-2f7a0d1b9c11/revoke"),  # an id, not a secret
    }
    assert {path: secret_free(path) for path in secrets} == secrets
    app = access_logged(status_app)
    caplog.set_level(logging.INFO, logger="brain.http")
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/invitations/Zm9vYmFyLXNlY3JldC1rZXk/", "QUERY_STRING": ""}
    list(app(environ, lambda status, headers, exc_info=None: None))
    assert "path=/invitations/***/" in caplog.text and "Zm9vYmFy" not in caplog.text
    # The web replicas' gunicorn access line, through the project's logger class.
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config

    config = Config()
    config.set("accesslog", str(tmp_path / "access.log"))
    gunicorn_logger = AccessLogger(config)
    raw = "/accounts/password/reset/MQ/cn1x2a-0f3c9d8e7b6a5/"
    gunicorn_logger.access(SimpleNamespace(status="200 OK", sent=10, response_length=10, headers=[]),
                           SimpleNamespace(headers=[]), {"REQUEST_METHOD": "GET", "RAW_URI": raw, "PATH_INFO": raw,
                                                         "QUERY_STRING": "", "SERVER_PROTOCOL": "HTTP/1.1",
                                                         "REMOTE_ADDR": "127.0.0.1"}, timedelta(milliseconds=3))
    written = (tmp_path / "access.log").read_text()
    assert "/accounts/password/reset/MQ/***/" in written and "cn1x2a" not in written
