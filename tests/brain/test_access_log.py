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
