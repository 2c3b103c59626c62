"""A refused body (413 over the cap, 401 before reading) never breaks the next request on the connection.
Driven over a raw socket against both servers that run the app: granian as `brain serve` starts it, and gunicorn
with gthread workers as the web replicas run it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from brain.db_url import connection_url
from knowledge.models import KnowledgeItem
from tests.conftest import Tenant
from tests.support.proc import free_port, wait_listening, web_server_argv

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["granian", "gunicorn"])
def web(request: pytest.FixtureRequest, tenant_a: Tenant) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {**os.environ, "DATABASE_URL": connection_url(), "BRAIN_MCP_MAX_BODY_BYTES": "1000000"}
    proc = subprocess.Popen(web_server_argv(request.param, port), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        yield request.param, port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _response(sock: socket.socket) -> tuple[bytes, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return b"", {}, b""
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (ln.decode().split(":", 1) for ln in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return lines[0], headers, body


def _exchange(port: int, request: bytes) -> tuple[tuple[bytes, dict[str, str], bytes], bytes | None]:
    """Sends `request` (from a thread: the server may stop reading a refused body), reads the answer, then sends a
    GET on the same connection; returns the first answer and the second status line (None when the server closed
    the connection cleanly)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:

        def send() -> None:
            with contextlib.suppress(OSError):  # the answer counts, not whether the whole body went out
                sock.sendall(request)

        sender = threading.Thread(target=send)
        sender.start()
        first = _response(sock)
        sender.join(20)
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return first, _response(sock)[0] or None
        except OSError:
            return first, None


def _post_then_get(port: int, path: str, size: int, token: str | None) -> tuple[tuple[bytes, dict[str, str], bytes],
                                                                               bytes | None]:
    """POSTs a body of `size` bytes with its Content-Length, then a GET on the same connection (`_exchange`)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * size}).encode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{auth}Content-Length: {len(body)}\r\n\r\n").encode()
    return _exchange(port, head + body)


def test_a_refused_body_is_drained_or_the_connection_closed(web: tuple[str, int], tenant_a: Tenant) -> None:
    server, web_port = web
    # over the MCP cap, small enough to drain: refused in JSON-RPC, the connection stays usable
    (status, headers, body), second = _post_then_get(web_port, "/mcp", 2_000_000, tenant_a.user_raw)
    assert status.startswith(b"HTTP/1.1 413") and json.loads(body)["error"]["code"] == -32600
    assert second is not None and second.startswith(b"HTTP/1.1 200")
    # refused before reading (no token): the body is drained all the same
    (status, _, body), second = _post_then_get(web_port, "/mcp", 2_000_000, None)
    assert status.startswith(b"HTTP/1.1 401") and "error" in json.loads(body)
    assert second is not None and second.startswith(b"HTTP/1.1 200")
    # REST over Django's upload cap: the error envelope, then the next request is answered
    (status, _, body), second = _post_then_get(web_port, "/api/v1/knowledge", 3_000_000, tenant_a.user_raw)
    assert status.startswith(b"HTTP/1.1 413") and json.loads(body)["error"]["code"] == "VALIDATION"
    assert second is not None and second.startswith(b"HTTP/1.1 200")
    # too large to drain: answered, then the connection is closed cleanly (gunicorn is asked to close it and says
    # so in the answer; granian closes a connection whose request body the app left unread by itself)
    (status, headers, body), second = _post_then_get(web_port, "/mcp", 9_000_000, tenant_a.user_raw)
    assert status.startswith(b"HTTP/1.1 413") and json.loads(body)["error"]["code"] == -32600 and second is None
    assert server == "granian" or headers.get("connection") == "close"


def _chunked(port: int, path: str, payload: bytes, token: str) -> tuple[tuple[bytes, dict[str, str], bytes],
                                                                       bytes | None]:
    """POSTs `payload` in 1,000-byte chunks without a Content-Length (as a client streaming its body does), then a
    GET on the same connection (`_exchange`)."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    pieces = [payload[i:i + 1000] for i in range(0, len(payload), 1000)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    return _exchange(port, head + body)


def test_a_chunked_body_reaches_the_application_whole(web: tuple[str, int], tenant_a: Tenant,
                                                      tenant_b: Tenant) -> None:
    _, web_port = web
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    call = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": hello}
    (status, _, body), second = _chunked(web_port, "/mcp", json.dumps(call).encode(), tenant_a.user_raw)
    assert status.startswith(b"HTTP/1.1 200") and json.loads(body)["result"]["serverInfo"]["name"] == "external-brain"
    assert second is not None and second.startswith(b"HTTP/1.1 200")
    # a REST write sent chunked is stored, in its tenant only
    rule = {"rule": "Rebase feature branches before merging " + "x" * 3000, "type": "reflex"}
    (status, _, body), _ = _chunked(web_port, "/api/v1/knowledge", json.dumps(rule).encode(), tenant_a.project_raw)
    assert status.startswith(b"HTTP/1.1 201"), body
    made = KnowledgeItem.objects.get(id=json.loads(body)["id"])
    assert made.content == rule["rule"] and made.project_id == tenant_a.project.id
    listed = urllib.request.Request(f"http://127.0.0.1:{web_port}/api/v1/knowledge",
                                    headers={"Authorization": f"Bearer {tenant_b.user_raw}"})
    with urllib.request.urlopen(listed, timeout=20) as answer:
        assert json.loads(answer.read())["items"] == []
    # over the MCP cap sent chunked: only the cap + 1 byte is held (a stranger's body is read before the token is
    # checked), refused in JSON-RPC, and the connection closed cleanly since the rest was left unread
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * 2_000_000}).encode()
    (status, _, body), second = _chunked(web_port, "/mcp", big, tenant_a.user_raw)
    assert status.startswith(b"HTTP/1.1 413") and json.loads(body)["error"]["code"] == -32600 and second is None
    (status, _, body), second = _chunked(web_port, "/mcp", big, "ebt_00000000_not-a-real-token")
    assert status.startswith(b"HTTP/1.1 401") and "error" in json.loads(body) and second is None
