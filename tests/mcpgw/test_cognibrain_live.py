"""The Cognibrain loop against a live server, driven by the `mcp` package's Client configured with the
Cognibrain tool names, in both protocol eras."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from knowledge.guard_models import DreamRun, GuardDecision
from sessions.models import Session

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
FAIL = "ERR_PNPM_NO_LOCKFILE Cannot install with frozen-lockfile because pnpm-lock.yaml is absent"


async def _loop(url: str, raw: str, mode: str) -> dict[str, Any]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {raw}"})
    out: dict[str, Any] = {}
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(name, args)
            assert not result.is_error, result
            return result.structured_content or {}

        out["tools"] = [t.name for t in (await client.list_tools()).tools]
        out["first"] = await call("cognibrain_context", {"task": "fix the web build", "repo": "acme/web"})
        await call("cognibrain_memory_add", {"content": "Never edit dist/** (vite output); edit src/ instead"})
        out["dist"] = await call("cognibrain_guard", {"action": "edit dist/index.js"})
        out["src"] = await call("cognibrain_guard", {"action": "edit src/index.ts"})
        for _ in range(2):
            out["failed"] = await call("cognibrain_outcome", {"command": "pnpm install", "exitCode": 1,
                                                              "stderr": FAIL})
        out["worked"] = await call("cognibrain_outcome", {"command": "npm ci", "exitCode": 0})
        out["correction"] = await call("cognibrain_correction", {"text": "Use npm ci, not pnpm install"})
        out["evidence"] = await call("cognibrain_patch_evidence", {"task": "fix the web build",
                                                                   "files": ["src/index.ts"], "commands": ["npm ci"]})
        out["end"] = await call("cognibrain_session_end", {"runDreamIfDue": True})
        out["next"] = await call("cognibrain_context", {"task": "install dependencies for the web build",
                                                        "repo": "acme/web"})
        out["warned"] = await call("cognibrain_guard", {"action": "pnpm install"})
        out["health"] = await call("cognibrain_health", {})
    return out


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_cognibrain_loop(live_server, tenant_a, tenant_b, mode: str) -> None:
    out = asyncio.run(_loop(f"{live_server.url}/mcp/cognibrain", tenant_a.user_raw, mode))
    assert len(out["tools"]) == 9 and all(t.startswith("cognibrain_") for t in out["tools"])
    assert out["first"]["memoriesUsed"] == 0
    assert out["dist"]["allowed"] is False and "edit src/" in out["dist"]["blockers"][0]
    assert out["src"] == {"allowed": True, "warnings": [], "blockers": []}
    assert out["failed"]["toolOutcomeMemoryId"] is not None
    assert out["worked"]["alternativeFor"] == out["failed"]["toolOutcomeMemoryId"]
    assert [s["type"] for s in out["correction"]["stored"]] == ["anti_principle", "recipe"]
    assert out["evidence"]["recorded"] is True
    assert out["end"]["closed"] is True and out["end"]["dreamQueued"] is True
    assert "npm ci" in out["next"]["context"] and out["next"]["tokenCount"] <= 1200
    assert out["warned"]["allowed"] is True
    assert any("npm ci" in w and "pnpm install" in w for w in out["warned"]["warnings"])
    assert out["health"]["lastDreamCycle"] is not None
    sessions = Session.objects.filter(user=tenant_a.user, client_type="cognibrain").order_by("started_at")
    # The handshake-era client DELETEs its MCP session on exit, which completes the bound agent session too.
    assert [s.ended_at is not None for s in sessions] == [True, mode == "legacy"]
    assert all(s.success is not False for s in sessions)
    assert DreamRun.objects.count() == 1 and GuardDecision.objects.filter(owner=tenant_b.user).count() == 0
    assert not Session.objects.filter(user=tenant_b.user).exists()
