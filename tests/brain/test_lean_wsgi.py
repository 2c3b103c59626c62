"""The MCP endpoints' lean way through the WSGI application (brain/lean_wsgi.py): the same answers as Django's whole
handler, request by request, without the middleware the endpoints do not use; everything else unchanged."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler

from brain.body_guard import body_guard
from brain.wsgi import application as lean_application
from mcpgw import protocol as p
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as served: the request signals may reconnect
HOST = "127.0.0.1:8000"
VERSION = "2025-11-25"


class Answer:
    def __init__(self, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


def _environ(method: str, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
               "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
               "wsgi.errors": sys.stderr, "wsgi.version": (1, 0), "wsgi.multithread": True,
               "wsgi.multiprocess": True, "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)),
               "CONTENT_TYPE": "application/json", "HTTP_HOST": HOST}
    environ.update({"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()})
    return environ


def _serve(app: Any, method: str, path: str, body: Any = None, **headers: str) -> Answer:
    raw = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
    started: list[tuple[str, list[tuple[str, str]]]] = []
    iterable = app(_environ(method, path, raw, headers), lambda status, sent, exc=None: started.append((status, sent)))
    try:
        content = b"".join(iterable)
    finally:
        iterable.close()
    return Answer(started[0][0], started[0][1], content)


FULL = body_guard(WSGIHandler())  # Django's handler with every middleware, as before the lean way
WAYS = {"lean": lean_application, "full": FULL}


def _auth(raw: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {raw}", "Accept": "application/json, text/event-stream"}


def _initialize(app: Any, raw: str, path: str = "/mcp") -> str:
    answer = _serve(app, "POST", path, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}},
        **_auth(raw))
    assert answer.status.startswith("200"), answer.body
    session = answer.header(p.SESSION_HEADER)
    assert session
    return session


def _call(app: Any, raw: str, session: str, method: str, params: dict[str, Any], path: str = "/mcp") -> Answer:
    return _serve(app, "POST", path, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
                  **_auth(raw), **{p.SESSION_HEADER: session, p.VERSION_HEADER: VERSION})


NONCE = re.compile(r"nonce-[\w-]+")


def _same(lean: Answer, full: Answer) -> None:
    assert lean.status == full.status
    assert [(name, NONCE.sub("nonce", value)) for name, value in lean.headers] == \
        [(name, NONCE.sub("nonce", value)) for name, value in full.headers]  # names, values and order
    assert lean.body == full.body


REFUSALS = [
    ("no token", "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {}),
    ("unknown token", "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
     {"Authorization": "Bearer eb_not_a_token"}),
    ("not JSON", "POST", "/mcp", b"{not json", {}),
    ("GET", "GET", "/mcp", None, {}),
    ("host outside ALLOWED_HOSTS", "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
     {"Host": "evil.example"}),
    ("Origin not allowed", "POST", "/mcp/cognibrain", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
     {"Origin": "https://evil.example"}),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[case[0] for case in REFUSALS])
def test_refusals_are_the_same_both_ways(case: tuple[Any, ...], tenant_a: Tenant) -> None:
    _, method, path, body, headers = case
    token = {} if "Authorization" in headers or case[0] == "no token" else _auth(tenant_a.user_raw)
    lean = _serve(lean_application, method, path, body, **{**token, **headers})
    _same(lean, _serve(FULL, method, path, body, **{**token, **headers}))
    assert int(lean.status[:3]) >= 400
    assert "error" in lean.json()  # JSON-RPC, never Django's HTML page


def test_tool_calls_are_the_same_both_ways_and_scoped_to_their_tenant(tenant_a: Tenant, tenant_b: Tenant) -> None:
    sessions = {way: _initialize(app, tenant_a.user_raw) for way, app in WAYS.items()}
    listed = {way: _call(app, tenant_a.user_raw, sessions[way], "tools/call",
                         {"name": "brain_list_projects", "arguments": {}}) for way, app in WAYS.items()}
    _same(listed["lean"], listed["full"])
    names = json.dumps(listed["lean"].json()["result"]["structuredContent"])
    assert tenant_a.project.name in names and tenant_b.project.name not in names
    foreign = _call(lean_application, tenant_b.user_raw, sessions["lean"], "tools/call",
                    {"name": "brain_list_projects", "arguments": {}})
    _same(foreign, _call(FULL, tenant_b.user_raw, sessions["full"], "tools/call",
                         {"name": "brain_list_projects", "arguments": {}}))
    assert foreign.status.startswith("404") or "error" in foreign.json()  # another tenant's session is not theirs
    closed = {way: _serve(app, "DELETE", "/mcp", None, **_auth(tenant_a.user_raw),
                          **{p.SESSION_HEADER: sessions[way]}) for way, app in WAYS.items()}
    _same(closed["lean"], closed["full"])
    assert closed["lean"].json() == {"closed": True}


def test_the_cognibrain_profile_takes_the_lean_way_too(tenant_a: Tenant) -> None:
    sessions = {way: _initialize(app, tenant_a.user_raw, "/mcp/cognibrain") for way, app in WAYS.items()}
    listed = {way: _call(app, tenant_a.user_raw, sessions[way], "tools/list", {}, "/mcp/cognibrain")
              for way, app in WAYS.items()}
    _same(listed["lean"], listed["full"])
    assert all(tool["name"].startswith("cognibrain_") for tool in listed["lean"].json()["result"]["tools"])


def test_https_redirect_and_refused_agents_as_django_answers_them(settings: Any, tenant_a: Tenant) -> None:
    settings.SECURE_SSL_REDIRECT = True  # middleware reads it when built: a fresh Django handler to compare with
    redirected = _serve(lean_application, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    _same(redirected, _serve(body_guard(WSGIHandler()), "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"}))
    assert redirected.status.startswith("301") and redirected.header("Location") == f"https://{HOST}/mcp"
    settings.SECURE_SSL_REDIRECT = False
    settings.DISALLOWED_USER_AGENTS = [re.compile(r"^BadBot")]
    refused = _serve(lean_application, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                     **{"User-Agent": "BadBot/1"})
    assert refused.status.startswith("403") and refused.json()["error"]["code"] == p.INVALID_REQUEST  # JSON-RPC
    _same(refused, _serve(body_guard(WSGIHandler()), "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          **{"User-Agent": "BadBot/1"}))


@pytest.fixture
def session_middleware_calls() -> Iterator[mock.MagicMock]:
    with mock.patch.object(SessionMiddleware, "process_request", autospec=True,
                           side_effect=SessionMiddleware.process_request) as spy:
        yield spy


def test_mcp_calls_skip_the_middleware_they_do_not_use(session_middleware_calls: mock.MagicMock,
                                                      tenant_a: Tenant) -> None:
    session = _initialize(lean_application, tenant_a.user_raw)
    pinged = _call(lean_application, tenant_a.user_raw, session, "ping", {})
    assert pinged.status.startswith("200")
    assert session_middleware_calls.call_count == 0
    assert _serve(lean_application, "GET", "/healthz").status.startswith("200")  # not lean: Django's whole chain
    assert session_middleware_calls.call_count == 1
    _initialize(FULL, tenant_a.user_raw)
    assert session_middleware_calls.call_count == 2


def test_each_lean_request_starts_and_finishes_once(tenant_a: Tenant) -> None:
    seen: list[str] = []

    def started(**kwargs: Any) -> None:
        seen.append("started")

    def finished(**kwargs: Any) -> None:
        seen.append("finished")

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        _initialize(lean_application, tenant_a.user_raw)
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert seen == ["started", "finished"]  # Django's connection upkeep runs on both, as for any request
