"""Hostile HTTP requests for /mcp, /mcp/cognibrain and /api/v1, as hypothesis strategies.

A case is plain data (method, path, headers, body bytes), so the CI suite sends it through Django's test
client and `brain bench fuzz` over a socket. JSON-RPC cases cover both MCP eras (a handshake session, or
the stateless `_meta` envelope with its headers), every method, every tool's arguments generated from its
inputSchema (valid, one member hostile, or anything), batches, raw bodies that are not JSON, and headers
that are missing, wrong or malformed (Authorization, Origin, Accept, Content-Type, Mcp-Session-Id, the
protocol headers). The other tenant's token is never sent: its session ids and row ids are, and must get
nothing back.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from brain.bench.fuzz_values import Raw, arguments_for, dump, hostile_text, hostile_value, json_values

LEGACY = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
METHODS = ("initialize", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
           "prompts/list", "prompts/get", "ping", "server/discover", "notifications/initialized",
           "notifications/cancelled", "completion/complete", "logging/setLevel")
# Header values HTTP can carry (visible ASCII and obs-text), as WSGI hands them to the application.
HEADER_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f")
# Strategies built once per target (building and validating one costs more than drawing from it).
_BUILT: dict[tuple[int, str, str], st.SearchStrategy[Any]] = {}


@dataclass(frozen=True)
class HttpCase:
    label: str  # the interface and what the case aims at, e.g. "/mcp tools/call"
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""


@dataclass(frozen=True)
class McpTarget:
    """What the generator knows of the server under test: the fuzzing tenant's token and open handshake
    session per endpoint, the other tenant's session ids and row ids, and each endpoint's tools."""

    token: str
    sessions: dict[str, str]  # path -> Mcp-Session-Id opened by `token`
    other_sessions: list[str]
    ids: list[str]
    tools: dict[str, dict[str, dict[str, Any]]]  # path -> tool name -> inputSchema
    resources: list[str] = field(default_factory=list)


def _header_text() -> st.SearchStrategy[str]:
    return st.text(HEADER_CHARS, max_size=40)


def _authorization(target: McpTarget) -> st.SearchStrategy[str | None]:
    good = f"Bearer {target.token}"
    return st.one_of(st.just(good), st.just(good), st.just(good), st.none(), st.sampled_from([
        "Bearer", "Bearer ", f"bearer {target.token}", f"Basic {target.token}", f"Bearer {target.token}x",
        f"Bearer  {target.token} ", "Bearer ebt_" + "A" * 5000, "Token abc"]), _header_text())


def _origin() -> st.SearchStrategy[str | None]:
    return st.one_of(st.none(), st.none(), st.sampled_from([
        "http://localhost:3000", "http://127.0.0.1", "https://evil.example", "http://[", "null", "http://[::1]:9",
        "http://localhost:99999", "file://", "http://%zz", "http://é.example"]), _header_text())


def _session(target: McpTarget, path: str) -> st.SearchStrategy[str | None]:
    own = target.sessions.get(path)
    return st.one_of(st.just(own), st.just(own), st.none(), st.sampled_from(target.other_sessions or [""]),
                     st.sampled_from(["", "x" * 4000, "00000000-0000-0000-0000-000000000000"]), _header_text())


def _common_headers(target: McpTarget, path: str) -> st.SearchStrategy[dict[str, str]]:
    key = (id(target), path, "headers")
    if key not in _BUILT:
        _BUILT[key] = _build_headers(target, path)
    return _BUILT[key]


def _build_headers(target: McpTarget, path: str) -> st.SearchStrategy[dict[str, str]]:
    optional = {
        "Origin": _origin(),
        "Accept": st.one_of(st.just("application/json, text/event-stream"), st.sampled_from(
            ["text/html", "*/*", "application/json", "text/event-stream", ""]), _header_text()),
        "Content-Type": st.one_of(st.just("application/json"), st.sampled_from(
            ["text/plain", "application/json; charset=latin-1", "application/json; charset=nope",
             "multipart/form-data; boundary=x", "application/x-www-form-urlencoded", ""]), _header_text()),
        "Mcp-Session-Id": _session(target, path),
    }
    auth = _authorization(target)
    return st.fixed_dictionaries({"Authorization": auth}, optional=optional).map(
        lambda h: {k: v for k, v in h.items() if v is not None})


def _id() -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(0, 10**6), st.integers(0, 10**6), st.text(max_size=12), st.none(), st.booleans(),
                     st.floats(allow_nan=False), st.sampled_from([2**70, -1, Raw("1e999"), [], {}]))


def _params(target: McpTarget, path: str, method: str) -> st.SearchStrategy[Any]:
    """Built once per target, endpoint and method (building and validating a strategy costs more than a draw)."""
    key = (id(target), path, method if method in METHODS else "?")
    if key not in _BUILT:
        _BUILT[key] = _build_params(target, path, method)
    return _BUILT[key]


def _build_params(target: McpTarget, path: str, method: str) -> st.SearchStrategy[Any]:
    tools = target.tools.get(path, {})
    if method == "tools/call" and tools:
        named = st.one_of([st.fixed_dictionaries({"name": st.just(name), "arguments": arguments_for(tools[name],
                                                                                                     target.ids)})
                           for name in sorted(tools)])
        other = st.fixed_dictionaries({"name": st.one_of(hostile_value(), st.sampled_from(
            ["brain_teach_knowledge", "cognibrain_guard", ""])), "arguments": json_values()})
        return st.one_of(named, named, named, other)
    if method == "resources/read":
        uri = st.one_of(st.sampled_from(target.resources or ["brain://user/peer-card"]), hostile_value())
        return st.fixed_dictionaries({"uri": uri})
    if method == "initialize":
        info = st.fixed_dictionaries({}, optional={"name": hostile_text(), "version": st.one_of(hostile_text(),
                                                                                               hostile_value())})
        return st.fixed_dictionaries({"protocolVersion": st.one_of(st.sampled_from([*LEGACY, MODERN]),
                                                                   hostile_value())},
                                     optional={"capabilities": json_values(), "clientInfo": st.one_of(info,
                                                                                                      hostile_value())})
    # Whatever a method might read (and echo back in an error): names, uris, cursors of any type.
    members = st.dictionaries(st.sampled_from(["name", "uri", "cursor", "arguments", "level", "ref", "_meta"]),
                              hostile_value(), max_size=3)
    return st.one_of(st.just({}), json_values(), hostile_value(), members, members)


def _header_safe(value: str) -> str:
    """A value as the stateless era puts it in a header: plain printable ASCII, or its =?base64?...?= form."""
    if value.isascii() and value.isprintable():
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8', 'surrogatepass')).decode()}?="


@st.composite
def _message(draw: st.DrawFn, target: McpTarget, path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """One JSON-RPC message and the era headers that go with it (mostly consistent with the body)."""
    method = draw(st.sampled_from(["tools/call"] * 12 + list(METHODS) + ["?"]))
    if method == "?":
        method = draw(hostile_text())
    message: dict[str, Any] = {"jsonrpc": draw(st.one_of(st.just("2.0"), st.just("2.0"), hostile_value())),
                               "method": method}
    if not method.startswith("notifications/") or draw(st.booleans()):
        message["id"] = draw(_id())
    params = draw(_params(target, path, method))
    headers: dict[str, str] = {}
    if draw(st.booleans()) and method != "initialize":  # the stateless era
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"}}
        if isinstance(params, dict):
            params = {**params, "_meta": draw(st.one_of(st.just(meta), st.just(meta), hostile_value()))}
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": _header_safe(method)}
        name = params.get("name", params.get("uri")) if isinstance(params, dict) else None
        if isinstance(name, str):
            headers["Mcp-Name"] = _header_safe(name)
    else:
        headers["MCP-Protocol-Version"] = draw(st.sampled_from(LEGACY))
    if draw(st.sampled_from([False] * 9 + [True])):  # a header that disagrees with the body
        headers[draw(st.sampled_from(["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"]))] = draw(_header_text())
    if draw(st.sampled_from([True] * 9 + [False])):
        message["params"] = params
    return message, headers


def _raw_body() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=64),
        st.sampled_from([b"", b"{", b"null", b"1", b'"x"', b"[]", b"\xef\xbb\xbf{}", b'{"jsonrpc":"2.0"}',
                         b'{"jsonrpc":"2.0","id":1,"method":"ping"}\x00', b'{"a":1,"a":2}', b"\xed\xa0\x80",
                         b'{"jsonrpc":"2.0","id":1,"method":"tools/\xff"}']),
        st.integers(10, 100_000).map(lambda d: b"[" * d),
        hostile_value().map(lambda v: dump(v).encode()),
    )


@st.composite
def mcp_case(draw: st.DrawFn, target: McpTarget) -> HttpCase:
    """One request to one of the MCP endpoints."""
    path = draw(st.sampled_from(sorted(target.tools)))
    headers = draw(_common_headers(target, path))
    shape = draw(st.sampled_from(["verb", "raw", "batch"] + ["one"] * 17))
    if shape == "verb":
        verb = draw(st.sampled_from(["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]))
        if verb == "DELETE" and headers.get("Mcp-Session-Id") == target.sessions.get(path):
            headers = {**headers, "Mcp-Session-Id": "not-this-one"}  # keep the fuzzer's own session open
        return HttpCase(f"{path} {verb}", verb, path, headers)
    if shape == "raw":
        return HttpCase(f"{path} raw", "POST", path, headers, draw(_raw_body()))
    key = (id(target), path, "message")
    if key not in _BUILT:
        _BUILT[key] = _message(target, path)
    message, era_headers = draw(_BUILT[key])
    body: Any = message
    label = f"{path} {message['method'] if message['method'] in METHODS else 'other'}"
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if message["method"] == "tools/call" and isinstance(name, str) and name in target.tools[path]:
        label += f" {name}"
    if shape == "batch":
        extra = draw(st.lists(_BUILT[key], max_size=3))
        body, label = [message, *[m for m, _ in extra]], f"{path} batch"
    return HttpCase(label, "POST", path, {**headers, **era_headers}, dump(body).encode())


@dataclass(frozen=True)
class RestOperation:
    method: str
    path: str  # with {name} placeholders
    body_schema: dict[str, Any] | None


def rest_operations(openapi: dict[str, Any]) -> list[RestOperation]:
    out = []
    for path, item in sorted(openapi.get("paths", {}).items()):
        for method, op in sorted(item.items()):
            content = (op.get("requestBody") or {}).get("content", {})
            schema = (content.get("application/json") or {}).get("schema")
            out.append(RestOperation(method.upper(), path, schema))
    return out


@st.composite
def rest_case(draw: st.DrawFn, openapi: dict[str, Any], token: str, ids: list[str]) -> HttpCase:
    """One raw request to a documented /api/v1 operation: hostile path ids, headers and JSON body."""
    key = (id(openapi), "", "operations")
    if key not in _BUILT:
        _BUILT[key] = st.sampled_from(rest_operations(openapi))
    op = draw(_BUILT[key])
    path = op.path
    while "{" in path:
        head, _, rest = path.partition("{")
        tail = rest.partition("}")[2]
        segment = draw(st.one_of(st.sampled_from(ids or ["x"]), st.sampled_from(["0", "-1", "%00", "..", "%ED%A0%80",
                                                                                 "a" * 300, "%2F"])))
        path = f"{head}{segment}{tail}"
    if draw(st.sampled_from([False] * 3 + [True])):
        path += "?" + draw(st.sampled_from(["limit=-1", "limit=1e9", "cursor=%00", "cursor=zz", "q=%ED%A0%80",
                                            "until=0.5", "since=yesterday", "limit=10&limit=x", "q=" + "a" * 5000]))
    key = (id(openapi), f"{op.method} {op.path}", "body")
    if key not in _BUILT:
        root = {"components": openapi.get("components", {}), **(op.body_schema or {})}
        _BUILT[key] = arguments_for(root, ids) if op.body_schema else st.one_of(st.none(), hostile_value())
    body = draw(_BUILT[key])
    headers = {"Authorization": draw(st.one_of(st.just(f"Bearer {token}"), st.just(f"Bearer {token}"),
                                               st.sampled_from(["", "Bearer", "Bearer x", f"Basic {token}"]),
                                               st.text(HEADER_CHARS, max_size=30)))}
    headers["Content-Type"] = draw(st.one_of(st.just("application/json"), st.sampled_from(
        ["text/plain", "application/json; charset=nope", "multipart/form-data; boundary=x", ""])))
    if draw(st.sampled_from([False] * 3 + [True])):
        headers[draw(st.sampled_from(["Idempotency-Key", "Origin", "X-CSRFToken", "Accept", "Cookie"]))] = \
            draw(st.text(HEADER_CHARS, max_size=300))
    raw = b"" if body is None else dump(body).encode()
    return HttpCase(f"{op.method} {op.path}", op.method, path, headers, raw)
