"""A live server on 127.0.0.1 driven by the `mcp` package's own Client in every connect mode."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from mcpgw.models import McpSession
from mcpgw.registry import REGISTRY, Resource
from projects.models import Project

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def whoami():
    resource = REGISTRY.add_resource(Resource(
        uri="brain://test/whoami", name="whoami", title="Who am I", description="The caller's e-mail.",
        reader=lambda principal: {"email": principal.user.email}))
    yield resource
    REGISTRY.remove_resource(resource.uri)


async def _session(url: str, raw: str, mode: str) -> dict[str, Any]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {raw}"})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        era = client.session.discover_result is not None
        tools = [t.name for t in (await client.list_tools()).tools]
        created = await client.call_tool("brain_create_project", {"name": f"Live {mode}"})
        listed = await client.call_tool("brain_list_projects", {})
        active = await client.call_tool("brain_get_active_project", {})
        refused = await client.call_tool("brain_create_project", {"name": ""})
        read = await client.read_resource("brain://test/whoami")
        with pytest.raises(MCPError) as missing:
            await client.read_resource("brain://test/missing")
        return {"modern": era, "tools": tools, "created": created, "listed": listed, "active": active,
                "refused": refused, "read": read, "missing": missing.value}


def _code(result: Any) -> str:
    """An error result as the client sees it: no structured content, the code in the text."""
    assert result.structured_content is None
    return str(json.loads(result.content[0].text)["error"]["code"])


@pytest.mark.parametrize("mode,modern,missing_code", [("legacy", False, -32002), ("auto", True, -32602),
                                                      ("2026-07-28", True, -32602)])
def test_client_modes(live_server, tenant_a, tenant_b, whoami, mode: str, modern: bool, missing_code: int) -> None:
    out = asyncio.run(_session(f"{live_server.url}/mcp", tenant_a.user_raw, mode))
    assert out["modern"] is modern
    project_tools = [t for t in out["tools"] if t.endswith("project") or t.endswith("projects")]
    assert project_tools == ["brain_create_project", "brain_list_projects", "brain_get_active_project"]
    assert out["created"].structured_content["created"] is True and not out["created"].is_error
    names = [x["name"] for x in out["listed"].structured_content["projects"]]
    assert names == ["Alpha App", f"Live {mode}"]
    assert out["active"].structured_content["project"]["source"] == "first_project_fallback"
    assert out["refused"].is_error and _code(out["refused"]) == "VALIDATION"
    assert json.loads(out["read"].contents[0].text) == {"email": "alice@a.example"}
    assert out["missing"].error.code == missing_code
    assert not Project.objects.filter(org=tenant_b.project.org, name__startswith="Live").exists()
    if mode == "legacy":  # the client DELETEs its session on exit; it made tool calls, so it is a clean close
        assert McpSession.objects.get().close_reason == "deleted"
    else:
        assert McpSession.objects.count() == 0


def test_project_token_client_sees_only_its_project(live_server, tenant_a, tenant_b, whoami) -> None:
    async def run() -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {tenant_b.project_raw}"})
        async with http, Client(streamable_http_client(f"{live_server.url}/mcp", http_client=http)) as client:
            listed = await client.call_tool("brain_list_projects", {})
            created = await client.call_tool("brain_create_project", {"name": "Nope"})
            return listed, created

    listed, created = asyncio.run(run())
    assert [x["name"] for x in listed.structured_content["projects"]] == ["Bravo App"]
    assert created.is_error and _code(created) == "FORBIDDEN_PROJECT"
