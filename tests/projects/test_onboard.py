"""The installers: served with the server URL only, lint-clean, and run for real against a live server
with a throwaway HOME and a fake `claude` on PATH that records its arguments."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.test import Client

from projects.views.onboard import render_script
from tests.factories import make_tenant
from tests.support.proc import free_port

SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or "shellcheck"
FAKE_CLAUDE = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$HOME/claude-calls.log"
if [ "$1" = "--version" ]; then echo "2.1.0 (Claude Code)"; fi
exit 0
"""


@dataclass
class Run:
    code: int
    out: str
    err: str
    home: Path

    @property
    def claude_calls(self) -> list[str]:
        log = self.home / "claude-calls.log"
        return log.read_text().splitlines() if log.exists() else []


def _script(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "onboard.sh"
    path.write_text(render_script("onboard.sh", base_url))
    return path


def _run(script: Path, home: Path, *, token: str, args: tuple[str, ...] = (), with_claude: bool = True,
         url: str | None = None) -> Run:
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if with_claude:
        (bin_dir / "claude").write_text(FAKE_CLAUDE)
        (bin_dir / "claude").chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "BRAIN_MCP_TOKEN": token, "LANG": "C.UTF-8"}
    if url:
        env["BRAIN_URL"] = url
    done = subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return Run(done.returncode, done.stdout, done.stderr, home)


def test_served_script_has_the_server_url_and_no_token(tmp_path: Path) -> None:
    for name in ("onboard.sh", "onboard.ps1"):
        response = Client().get(f"/api/{name}")
        body = response.content.decode()
        assert response.status_code == 200 and response["Cache-Control"] == "no-store"
        assert "http://testserver" in body and "__BRAIN_URL__" not in body
        assert re.search(r"ebt_[0-9a-f]{8}_", body) is None  # no token, only the URL is templated


def test_shell_script_is_bash_n_and_shellcheck_clean(tmp_path: Path) -> None:
    script = _script(tmp_path, "https://brain.example.com")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    result = subprocess.run([SHELLCHECK, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_an_unsafe_server_url_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot carry safely"):
        render_script("onboard.sh", "http://x'$(touch /tmp/p)")


def test_missing_token_and_unknown_client_fail_with_advice(tmp_path: Path) -> None:
    script = _script(tmp_path, "http://127.0.0.1:9")
    run = _run(script, tmp_path / "home", token="")
    assert run.code == 1 and "export BRAIN_MCP_TOKEN" in run.err
    run = _run(script, tmp_path / "home", token="ebt_x", args=("--client", "emacs"))
    assert run.code == 1 and "unsupported client 'emacs'" in run.err


def test_server_down_is_diagnosed_as_connection_refused(tmp_path: Path) -> None:
    script = _script(tmp_path, f"http://127.0.0.1:{free_port()}")
    run = _run(script, tmp_path / "home", token="ebt_whatever_token")
    assert run.code == 1 and "connection refused" in run.err, run.err
    assert run.claude_calls == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_bad_token_and_wrong_path_are_diagnosed(live_server: object, tmp_path: Path) -> None:
    url = str(live_server.url)  # type: ignore[attr-defined]
    script = _script(tmp_path, url)
    run = _run(script, tmp_path / "home", token="ebt_deadbeef_notarealtoken")
    assert run.code == 1 and "HTTP 401" in run.err and "settings/tokens" in run.err, run.err
    assert run.claude_calls == [] and not (tmp_path / "home" / ".claude.json").exists()
    tenant = make_tenant("installer@i.example", "Installer App")
    run = _run(script, tmp_path / "home2", token=tenant["user_raw"], url=f"{url}/nope")
    assert run.code == 1 and "HTTP 404" in run.err, run.err


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_success_configures_claude_pings_and_is_idempotent(live_server: object, tmp_path: Path) -> None:
    from sessions.models import Session as AgentSession  # the install ping's session row

    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    other = make_tenant("other@o.example", "Other App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    first = _run(script, home, token=tenant["user_raw"])
    assert first.code == 0, first.out + first.err
    assert "brain_get_user_style answered" in first.out and "installation recorded" in first.out
    assert "Paste this into your agent" in first.out and "warning" not in first.err
    add = f"mcp add --transport http --scope user brain {url}/mcp --header Authorization: Bearer {tenant['user_raw']}"
    once = first.claude_calls
    assert once == ["mcp remove --scope user brain", add, "--version"]
    sessions = AgentSession.objects.filter(user=tenant["user"])
    assert sessions.count() == 1 and sessions.get().ended_at is not None
    assert not AgentSession.objects.filter(user=other["user"]).exists()
    second = _run(script, home, token=tenant["user_raw"])
    assert second.code == 0 and second.claude_calls == once * 2  # the same end state, nothing added


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_without_claude_cli_the_config_file_is_merged_with_a_backup(live_server: object, tmp_path: Path) -> None:
    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {"other": {"url": "https://x.example/mcp"}}}))
    first = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor"), with_claude=False)
    assert first.code == 0, first.out + first.err
    merged = json.loads(config.read_text())
    assert merged["mcpServers"]["other"] == {"url": "https://x.example/mcp"}
    assert merged["mcpServers"]["brain"] == {
        "url": f"{url}/mcp", "headers": {"Authorization": "Bearer ${env:BRAIN_MCP_TOKEN}"},
    }
    assert tenant["user_raw"] not in config.read_text()
    assert len(list(config.parent.glob("mcp.json.bak-*"))) == 1
    second = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor"), with_claude=False)
    assert second.code == 0 and f"unchanged: {config}" in second.out
    assert len(list(config.parent.glob("mcp.json.bak-*"))) == 1 and json.loads(config.read_text()) == merged
    assert os.stat(config).st_mode & 0o077 == 0
