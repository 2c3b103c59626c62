"""Every transport status and error of /mcp, in both eras, through Django's test client."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from mcpgw import protocol as p
from mcpgw.models import McpSession
from tests.mcpgw.conftest import MODERN, Mcp, ops


def test_get_is_405_with_json(mcp_a: Mcp) -> None:
    response = mcp_a.client.get("/mcp", headers=mcp_a.headers())
    assert response.status_code == 405 and response["Allow"] == "POST, DELETE"
    assert response.json()["error"]["code"] == p.INVALID_REQUEST


def test_batch_is_400(mcp_a: Mcp) -> None:
    response = mcp_a.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == p.INVALID_REQUEST and "one JSON-RPC" in error["message"]


def test_initialize_without_an_id_is_told_so(mcp_a: Mcp) -> None:
    """Not a notification of some session: the handshake itself, sent without the id its answer needs."""
    response = mcp_a.post({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
    assert response.status_code == 400
    assert response.json()["error"] == {"code": p.INVALID_REQUEST, "message": "initialize needs a string or integer id"}
    assert McpSession.objects.count() == 0


def test_malformed_json_is_parse_error(mcp_a: Mcp) -> None:
    response = mcp_a.post(None, raw_body=b'{"jsonrpc": "2.0", "id": 1,')
    assert response.status_code == 400
    message = "Parse error: the body is not valid JSON"
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": p.PARSE_ERROR, "message": message}}


@override_settings(MCP_MAX_BODY_BYTES=200)
def test_oversized_body_is_413(mcp_a: Mcp) -> None:
    response = mcp_a.request("initialize", {"protocolVersion": "2025-11-25", "padding": "x" * 300})
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert McpSession.objects.count() == 0


@override_settings(MCP_ALLOWED_ORIGINS=["https://ide.example"])
def test_origin_allow_list(mcp_a: Mcp) -> None:
    evil = mcp_a.request("initialize", {"protocolVersion": "2025-11-25"}, Origin="https://evil.example")
    assert evil.status_code == 403 and evil.json()["error"]["code"] == p.INVALID_REQUEST
    assert McpSession.objects.count() == 0
    for origin in ("https://ide.example", "http://localhost:5173"):
        ok = mcp_a.request("initialize", {"protocolVersion": "2025-11-25"}, Origin=origin)
        assert ok.status_code == 200, origin


def test_disallowed_host_is_json_400(mcp_a: Mcp) -> None:
    response = mcp_a.client.post("/mcp", data="{}", content_type="application/json",
                                 headers={**mcp_a.headers(), "Host": "evil.example.com"})
    assert response.status_code == 400 and response.json()["error"]["code"] == p.INVALID_REQUEST


@pytest.mark.parametrize("raw", [None, "ebt_00000000_not-a-real-token"])
def test_missing_or_invalid_bearer_is_401(client: Client, raw: str | None, tenant_a, caplog) -> None:
    caller = Mcp(client, raw)
    response = caller.request("initialize", {"protocolVersion": "2025-11-25"})
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == p.SESSION_ERROR
    assert response.json()["id"] == caller.ids  # the refusal names the request it refuses
    assert [f["reason"] for f in ops(caplog, "mcp.unauth")] == ["missing" if raw is None else "invalid"]
    unusable = caller.post({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"})
    assert unusable.status_code == 401 and unusable.json()["id"] is None  # an id JSON-RPC does not allow: null


# --- handshake era ---------------------------------------------------------------------------------


@pytest.mark.parametrize("requested,negotiated", [("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"),
                                                  ("2025-11-25", "2025-11-25"), ("2024-11-05", "2025-11-25")])
def test_initialize_negotiates(mcp_a: Mcp, requested: str, negotiated: str) -> None:
    response = mcp_a.request("initialize", {"protocolVersion": requested, "capabilities": {},
                                            "clientInfo": {"name": "x", "version": "1"}})
    result = response.json()["result"]
    assert result["protocolVersion"] == negotiated
    assert result["serverInfo"]["name"] == "external-brain"
    assert set(result["capabilities"]) == {"tools", "resources", "prompts"}
    assert all(name in result["instructions"] for name in ("brain_start_session", "brain_log_event",
                                                           "brain_report_session_outcome", "knowledgeUsed"))
    session_id = response[p.SESSION_HEADER]
    assert len(session_id) >= 40 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert McpSession.objects.get(pk=session_id).protocol_version == negotiated


def test_session_ids_are_unique(mcp_a: Mcp) -> None:
    assert len({mcp_a.initialize() for _ in range(3)}) == 3


def test_initialized_notification_and_ping(mcp_a: Mcp) -> None:
    session = mcp_a.initialize()
    note = mcp_a.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {p.SESSION_HEADER: session})
    assert note.status_code == 202 and note.content == b""
    pong = mcp_a.legacy(session, "ping")
    assert pong.status_code == 200 and pong.json() == {"jsonrpc": "2.0", "id": mcp_a.ids, "result": {}}


def test_missing_session_is_400_unknown_is_404(mcp_a: Mcp) -> None:
    missing = mcp_a.request("tools/list")
    assert missing.status_code == 400 and p.SESSION_HEADER in missing.json()["error"]["message"]
    unknown = mcp_a.legacy("no-such-session", "tools/list")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == p.SESSION_ERROR


def test_unsupported_version_header_is_400(mcp_a: Mcp) -> None:
    session = mcp_a.initialize()
    response = mcp_a.request("ping", None, **{p.SESSION_HEADER: session, p.VERSION_HEADER: "1999-01-01"})
    assert response.status_code == 400 and "1999-01-01" in response.json()["error"]["message"]


def test_delete_closes_then_404(mcp_a: Mcp, caplog) -> None:
    session = mcp_a.initialize()
    closed = mcp_a.client.delete("/mcp", headers=mcp_a.headers({p.SESSION_HEADER: session}))
    assert closed.status_code == 200 and closed.json() == {"closed": True}
    assert McpSession.objects.get(pk=session).close_reason == "deleted"
    assert mcp_a.legacy(session, "ping").status_code == 404
    assert mcp_a.client.delete("/mcp", headers=mcp_a.headers({p.SESSION_HEADER: session})).status_code == 404


def test_legacy_unknown_method_and_unknown_tool(mcp_a: Mcp) -> None:
    session = mcp_a.initialize()
    unknown = mcp_a.legacy(session, "completion/complete")
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == p.METHOD_NOT_FOUND
    tool = mcp_a.legacy(session, "tools/call", {"name": "brain_nope", "arguments": {}})
    assert tool.json()["error"]["code"] == p.INVALID_PARAMS and "tools/list" in tool.json()["error"]["message"]


def test_legacy_missing_resource(mcp_a: Mcp) -> None:
    session = mcp_a.initialize()
    listed = mcp_a.legacy(session, "resources/list").json()["result"]
    assert "resources" in listed
    response = mcp_a.legacy(session, "resources/read", {"uri": "brain://nowhere"})
    error = response.json()["error"]
    assert error["code"] == p.LEGACY_RESOURCE_NOT_FOUND and error["data"] == {"uri": "brain://nowhere"}


# --- stateless era ---------------------------------------------------------------------------------


def test_discover(mcp_a: Mcp) -> None:
    response = mcp_a.modern("server/discover")
    result = response.json()["result"]
    assert response.status_code == 200 and result["supportedVersions"] == list(p.ALL_VERSIONS)
    assert result["resultType"] == "complete" and result["cacheScope"] == "private" and result["ttlMs"] >= 0
    assert "brain_get_user_style" in result["instructions"]
    assert result["_meta"][p.SERVER_INFO_META_KEY]["name"] == "external-brain"
    assert p.SESSION_HEADER not in response


def test_modern_results_are_valid_for_the_sdk(mcp_a: Mcp) -> None:
    from mcp_types.methods import serialize_server_result

    for method in ("server/discover", "tools/list", "resources/list", "prompts/list"):
        result = mcp_a.modern(method).json()["result"]
        assert serialize_server_result(method, MODERN, result)["resultType"] == "complete"
        assert {"ttlMs", "cacheScope"} <= set(result)


@pytest.mark.parametrize("meta,missing", [
    (None, "_meta"),
    ({p.CLIENT_CAPABILITIES_META_KEY: {}}, p.PROTOCOL_VERSION_META_KEY),
    ({p.PROTOCOL_VERSION_META_KEY: MODERN}, p.CLIENT_CAPABILITIES_META_KEY),
])
def test_meta_is_required(mcp_a: Mcp, meta, missing: str) -> None:
    params = {} if meta is None else {"_meta": meta}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": params}
    response = mcp_a.post(body, {p.VERSION_HEADER: MODERN, p.METHOD_HEADER: "tools/list"})
    assert response.status_code == 400 and response.json()["id"] == 7
    assert response.json()["error"]["code"] == p.INVALID_PARAMS and missing in response.json()["error"]["message"]


@pytest.mark.parametrize("override", [
    {p.VERSION_HEADER: "2025-11-25"},
    {p.METHOD_HEADER: "tools/list"},
    {p.NAME_HEADER: "brain_create_project"},
])
def test_header_mismatch(mcp_a: Mcp, override: dict[str, str]) -> None:
    response = mcp_a.modern("tools/call", {"name": "brain_list_projects", "arguments": {}}, **override)
    assert response.status_code == 400 and response.json()["error"]["code"] == p.HEADER_MISMATCH


def test_name_header_base64_and_whitespace(mcp_a: Mcp) -> None:
    encoded = mcp_a.modern("tools/call", {"name": "brain_list_projects", "arguments": {}},
                           **{p.NAME_HEADER: "=?base64?YnJhaW5fbGlzdF9wcm9qZWN0cw==?="})
    assert encoded.status_code == 200
    bad = mcp_a.modern("tools/call", {"name": "brain_list_projects", "arguments": {}},
                       **{p.NAME_HEADER: "=?base64?not base64?="})
    assert bad.json()["error"]["code"] == p.HEADER_MISMATCH


def test_unsupported_modern_version(mcp_a: Mcp) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
        p.PROTOCOL_VERSION_META_KEY: "2099-01-01", p.CLIENT_CAPABILITIES_META_KEY: {}}}}
    response = mcp_a.post(body, {p.VERSION_HEADER: "2099-01-01", p.METHOD_HEADER: "tools/list"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == p.UNSUPPORTED_PROTOCOL_VERSION
    assert response.json()["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


@pytest.mark.parametrize("method", ["initialize", "ping", "no/such/method"])
def test_modern_unknown_method_is_404(mcp_a: Mcp, method: str) -> None:
    response = mcp_a.modern(method)
    assert response.status_code == 404 and response.json()["error"]["code"] == p.METHOD_NOT_FOUND
    assert response.json()["id"] == mcp_a.ids


def test_modern_notification_is_202(mcp_a: Mcp) -> None:
    response = mcp_a.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}},
                          {p.VERSION_HEADER: MODERN, p.METHOD_HEADER: "notifications/cancelled"})
    assert response.status_code == 202 and response.content == b""


def test_modern_missing_resource_and_caching_hints(mcp_a: Mcp) -> None:
    response = mcp_a.modern("resources/read", {"uri": "brain://nowhere"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == p.INVALID_PARAMS
    assert response.json()["error"]["data"] == {"uri": "brain://nowhere"}
    listed = mcp_a.modern("resources/list").json()["result"]
    assert listed["cacheScope"] == "private" and isinstance(listed["ttlMs"], int)


def test_every_error_body_is_json(mcp_a: Mcp) -> None:
    for response in (mcp_a.client.put("/mcp", headers=mcp_a.headers()), mcp_a.post([]),
                     mcp_a.modern("nope"), mcp_a.request("tools/list")):
        assert response["Content-Type"] == "application/json"
        assert "error" in json.loads(response.content)


@pytest.mark.parametrize("path", ["/mcp/", "/mcp/cognibrain/", "/mcp/tools", "/mcp/%0A"])
def test_a_path_under_mcp_that_is_no_endpoint_is_a_json_rpc_404(mcp_a: Mcp, path: str) -> None:
    for response in (mcp_a.client.post(path, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
                                       content_type="application/json", headers=mcp_a.headers()),
                     mcp_a.client.get(path, headers=mcp_a.headers())):
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        error = response.json()["error"]
        assert error["code"] == p.INVALID_REQUEST and "connect to /mcp" in error["message"]
    assert McpSession.objects.count() == 0  # nothing was opened on the way
