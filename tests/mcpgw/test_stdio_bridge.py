"""`brain mcp stdio` as a `command` client config runs it: a real subprocess driven by the mcp Client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest
from mcp import Client, StdioServerParameters

from mcpgw.models import McpSession
from tests.support.proc import BRAIN

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _params(url: str, token: str) -> StdioServerParameters:
    # The shape of {"command": "brain", "args": ["mcp", "stdio"], "env": {...}} in a client config.
    return StdioServerParameters(command=BRAIN, args=["mcp", "stdio"],
                                 env={"BRAIN_URL": url, "BRAIN_MCP_TOKEN": token, "PATH": os.environ["PATH"]})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_stdio_client_lists_and_calls(live_server, tenant_a, tenant_b, mode: str) -> None:
    async def run() -> tuple[list[str], dict, dict]:
        async with Client(_params(live_server.url, tenant_a.user_raw), mode=mode) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            listed = await client.call_tool("brain_list_projects", {})
            created = await client.call_tool("brain_create_project", {"name": "Via stdio"})
            return tools, listed.structured_content, created.structured_content

    tools, listed, created = asyncio.run(run())
    assert "brain_get_active_project" in tools
    assert [x["name"] for x in listed["projects"]] == ["Alpha App"]
    assert created["created"] is True
    if mode == "legacy":  # the bridge closes its session when stdin ends
        assert McpSession.objects.get().close_reason == "deleted"


def test_bridge_passes_auth_errors_with_the_request_id(live_server, tenant_a) -> None:
    lines = [json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}), "not json"]
    env = {**os.environ, "BRAIN_URL": f"{live_server.url}/mcp", "BRAIN_MCP_TOKEN": "ebt_nope_nope"}
    done = subprocess.run([BRAIN, "mcp", "stdio"], input="\n".join(lines) + "\n", env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[0]["id"] == 7 and answers[0]["error"]["code"] == -32001
    assert answers[1]["error"]["code"] == -32700
    assert "stdin closed" in done.stderr


def test_bridge_needs_its_environment() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_URL", "BRAIN_MCP_TOKEN")}
    done = subprocess.run([BRAIN, "mcp", "stdio"], input="", env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "BRAIN_MCP_TOKEN" in done.stderr
