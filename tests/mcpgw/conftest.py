"""Helpers for driving /mcp through Django's test client in both eras."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from mcpgw import protocol as p

MODERN = "2026-07-28"


class Mcp:
    """A thin JSON-RPC caller over the Django test client; every call returns the raw response."""

    def __init__(self, client: Client, raw: str | None) -> None:
        self.client, self.raw = client, raw
        self.ids = 0

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {"Accept": "application/json, text/event-stream"}
        if self.raw is not None:
            base["Authorization"] = f"Bearer {self.raw}"
        return {**base, **(extra or {})}

    def post(self, body: Any, headers: dict[str, str] | None = None, raw_body: bytes | None = None) -> Any:
        data = raw_body if raw_body is not None else json.dumps(body)
        return self.client.post("/mcp", data=data, content_type="application/json", headers=self.headers(headers))

    def request(self, method: str, params: dict[str, Any] | None = None, **headers: str) -> Any:
        self.ids += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            body["params"] = params
        return self.post(body, headers)

    # handshake era
    def initialize(self, version: str = "2025-11-25") -> str:
        response = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                               "clientInfo": {"name": "pytest", "version": "1"}})
        assert response.status_code == 200, response.content
        return response[p.SESSION_HEADER]

    def legacy(self, session: str, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.request(method, params, **{p.SESSION_HEADER: session, p.VERSION_HEADER: "2025-11-25"})

    # stateless era
    def modern(self, method: str, params: dict[str, Any] | None = None, **headers: str) -> Any:
        params = dict(params or {})
        params["_meta"] = {p.PROTOCOL_VERSION_META_KEY: MODERN, p.CLIENT_CAPABILITIES_META_KEY: {},
                           p.CLIENT_INFO_META_KEY: {"name": "pytest", "version": "1"}}
        name_key = p.NAME_BEARING.get(method)
        base = {p.VERSION_HEADER: MODERN, p.METHOD_HEADER: method}
        if name_key:
            base[p.NAME_HEADER] = str(params[name_key])
        return self.request(method, params, **{**base, **headers})


def call_tool(mcp: Mcp, name: str, arguments: dict[str, Any] | None = None, session: str | None = None) -> Any:
    params = {"name": name, "arguments": arguments or {}}
    response = mcp.legacy(session, "tools/call", params) if session else mcp.modern("tools/call", params)
    assert response.status_code == 200, response.content
    return response.json()["result"]


@pytest.fixture
def mcp_a(tenant_a: Any, client: Client) -> Mcp:
    return Mcp(client, tenant_a.user_raw)


@pytest.fixture
def mcp_b(tenant_b: Any, client: Client) -> Mcp:
    return Mcp(client, tenant_b.user_raw)


def ops(caplog: pytest.LogCaptureFixture, op: str) -> list[dict[str, Any]]:
    """The structured fields of every `op=<op>` line logged so far."""
    return [r.op_fields for r in caplog.records if getattr(r, "op_fields", {}).get("op") == op]


def error_of(result: dict[str, Any]) -> dict[str, str]:
    """The {code, message} of a tool error result, checking its shape: isError, text only (no structuredContent,
    which must fit the tool's outputSchema)."""
    assert result["isError"] is True and "structuredContent" not in result, result
    assert [c["type"] for c in result["content"]] == ["text"]
    error = json.loads(result["content"][0]["text"])["error"]
    assert set(error) == {"code", "message"} and error["message"], error
    return dict(error)


class Cog(Mcp):
    """The test caller pointed at the Cognibrain endpoint."""

    def post(self, body: Any, headers: dict[str, str] | None = None, raw_body: bytes | None = None) -> Any:
        data = raw_body if raw_body is not None else json.dumps(body)
        return self.client.post("/mcp/cognibrain", data=data, content_type="application/json",
                                headers=self.headers(headers))

    def delete(self, session: str) -> Any:
        return self.client.delete("/mcp/cognibrain", headers=self.headers({p.SESSION_HEADER: session}))


@pytest.fixture
def cog_a(tenant_a: Any, client: Client) -> Cog:
    return Cog(client, tenant_a.user_raw)


@pytest.fixture
def cog_b(tenant_b: Any, client: Client) -> Cog:
    return Cog(client, tenant_b.user_raw)


@pytest.fixture
def cog_scoped(tenant_a: Any, client: Client) -> Cog:
    return Cog(client, tenant_a.project_raw)
