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
# Every curl the installer runs goes through this wrapper, which records its command line (what `ps` shows).
FAKE_CURL = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$HOME/curl-calls.log"
exec /usr/bin/curl "$@"
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

    @property
    def command_lines(self) -> str:
        return "\n".join(self.claude_calls) + "\n" + ((self.home / "curl-calls.log").read_text()
                                                     if (self.home / "curl-calls.log").exists() else "")


def _script(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "onboard.sh"
    path.write_text(render_script("onboard.sh", base_url))
    return path


def _config_with_another_server(path: Path) -> Path:
    """A client config that already holds someone else's server, which every merge must keep."""
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"other": {"url": "https://x.example/mcp"}}}))
    return path


def _run(script: Path, home: Path, *, token: str, args: tuple[str, ...] = (), with_claude: bool = True,
         url: str | None = None, extra_env: dict[str, str] | None = None) -> Run:
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "curl").write_text(FAKE_CURL)
    (bin_dir / "curl").chmod(0o755)
    if with_claude:
        (bin_dir / "claude").write_text(FAKE_CLAUDE)
        (bin_dir / "claude").chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "BRAIN_MCP_TOKEN": token, "LANG": "C.UTF-8"}
    if url:
        env["BRAIN_INSTALL_URL"] = url
    env.update(extra_env or {})
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


def test_the_powershell_installer_keeps_the_users_window_and_writes_json_without_a_bom(tmp_path: Path) -> None:
    """No PowerShell on this machine: these are the three lines Windows PowerShell 5.1 gets wrong, read from the
    script. `exit` inside the script block the wizard runs closes the user's window; Set-Content -Encoding UTF8
    writes a byte-order mark the clients' JSON parsers refuse; a native command's stderr under 'Stop' ends the run."""
    code = [line.split("#", 1)[0] for line in render_script("onboard.ps1", "https://b.example").splitlines()]
    assert not [line for line in code if re.search(r"\bexit\b", line)]
    assert not [line for line in code if "Set-Content" in line or "Get-Content -Raw -Path $Path" in line]
    native = [i for i, line in enumerate(code) if "2>$null" in line]
    assert native and all("'Continue'" in code[i - 1] and "'Stop'" in code[i + 1] for i in native)
    # Without the claude command, Claude Code's config is merged where CLAUDE_CONFIG_DIR moved it (as onboard.sh)
    assert any("$env:CLAUDE_CONFIG_DIR" in line and "$HOME" in line for line in code)


def test_an_unsafe_server_url_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot carry safely"):
        render_script("onboard.sh", "http://x'$(touch /tmp/p)")


def test_missing_token_and_unknown_client_fail_with_advice(tmp_path: Path) -> None:
    script = _script(tmp_path, "http://127.0.0.1:9")
    run = _run(script, tmp_path / "home", token="")
    assert run.code == 1 and "export BRAIN_MCP_TOKEN" in run.err
    run = _run(script, tmp_path / "home", token="ebt_x", args=("--client", "emacs"))
    assert run.code == 1 and "unsupported client 'emacs'" in run.err
    run = _run(script, tmp_path / "home", token="ebt_x", args=("--profile", "hivemind"))
    assert run.code == 1 and "unsupported profile 'hivemind'" in run.err and "cognibrain" in run.err
    assert not (tmp_path / "home" / ".claude.json").exists()


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
    # Claude Code's user scope, written to its own file: the token is on no command line (curl's nor claude's)
    config = home / ".claude.json"
    entry = {"type": "http", "url": f"{url}/mcp", "headers": {"Authorization": f"Bearer {tenant['user_raw']}"}}
    assert json.loads(config.read_text())["mcpServers"]["brain"] == entry
    assert os.stat(config).st_mode & 0o077 == 0
    assert first.claude_calls == ["--version"]
    assert tenant["user_raw"] not in first.command_lines and "Authorization" not in first.command_lines
    assert first.command_lines.count("/mcp") >= 5  # the wrapper did see every request
    sessions = AgentSession.objects.filter(user=tenant["user"])
    assert sessions.count() == 1 and sessions.get().ended_at is not None
    assert sessions.get().prompt == "brain installer ping v2"
    assert not AgentSession.objects.filter(user=other["user"]).exists()
    second = _run(script, home, token=tenant["user_raw"])
    assert second.code == 0 and f"unchanged: {config}" in second.out  # the same end state, nothing added


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_new_account_gets_no_project_from_the_installer(live_server: object, tmp_path: Path) -> None:
    from projects.models import Project
    from projects.services.accounts import token_create, user_create
    from sessions.models import Session as AgentSession

    user = user_create(email="fresh@f.example")
    _, raw = token_create(user=user, label="laptop")
    make_tenant("other@o.example", "Other App")
    before = Project.objects.count()
    run = _run(_script(tmp_path, str(live_server.url)), tmp_path / "home", token=raw)  # type: ignore[attr-defined]
    assert run.code == 0, run.out + run.err
    assert "skipped: no project yet" in run.out
    assert Project.objects.count() == before and not AgentSession.objects.filter(user=user).exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_without_claude_cli_the_config_file_is_merged_with_a_backup(live_server: object, tmp_path: Path) -> None:
    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    config = _config_with_another_server(home / ".cursor" / "mcp.json")
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
    # Cursor reads BRAIN_MCP_TOKEN from the environment: a private file the profile sources, once
    env_file = home / ".config" / "external-brain" / "env"
    assert env_file.read_text() == f"export BRAIN_MCP_TOKEN='{tenant['user_raw']}'\n"
    assert os.stat(env_file).st_mode & 0o077 == 0
    bashrc = (home / ".bashrc").read_text()
    assert tenant["user_raw"] not in bashrc and bashrc.count(".config/external-brain/env\"") == 2
    assert tenant["user_raw"] not in first.command_lines + second.command_lines


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cognibrain_profile_installs_beside_the_brain_tools(live_server: object, tmp_path: Path) -> None:
    from sessions.models import Session as AgentSession

    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    other = make_tenant("other@o.example", "Other App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    brain = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor"), with_claude=False)
    assert brain.code == 0, brain.out + brain.err
    cog = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor", "--profile", "cognibrain"),
               with_claude=False)
    assert cog.code == 0, cog.out + cog.err
    assert f"Testing the connection to {url}/mcp/cognibrain" in cog.out
    assert "cognibrain_health answered" in cog.out and "cognibrain_memory_add" in cog.out
    servers = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers["brain"]["url"] == f"{url}/mcp"  # the brain entry is kept, the Cognibrain one added
    assert servers["cognibrain"] == {
        "url": f"{url}/mcp/cognibrain", "headers": {"Authorization": "Bearer ${env:BRAIN_MCP_TOKEN}"},
    }
    assert tenant["user_raw"] not in cog.command_lines
    assert "-X DELETE" in cog.command_lines  # the smoke test's MCP session is ended, not left to expire
    # health opens no session; the brain run's installer ping is the tenant's only one, the other has none
    assert AgentSession.objects.filter(user=tenant["user"], client_type="cognibrain").count() == 0
    assert not AgentSession.objects.filter(user=other["user"]).exists()
    again = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor", "--profile=cognibrain"),
                 with_claude=False)
    assert again.code == 0 and "unchanged:" in again.out


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_codex_tables_are_added_per_profile_and_a_different_one_is_refused(live_server: object,
                                                                           tmp_path: Path) -> None:
    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    other = make_tenant("other@o.example", "Other App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "o4"\n\n[mcp_servers.docs]\nurl = "https://docs.example/mcp"\n')
    for profile in ("brain", "cognibrain"):
        done = _run(script, home, token=tenant["user_raw"], args=("--client", "codex", "--profile", profile),
                    with_claude=False)
        assert done.code == 0 and f"updated: {config}" in done.out, done.out + done.err
    import tomllib

    servers = tomllib.loads(config.read_text())["mcp_servers"]
    assert servers["docs"] == {"url": "https://docs.example/mcp"}
    assert servers["brain"] == {"url": f"{url}/mcp", "bearer_token_env_var": "BRAIN_MCP_TOKEN"}
    assert servers["cognibrain"] == {"url": f"{url}/mcp/cognibrain", "bearer_token_env_var": "BRAIN_MCP_TOKEN"}
    again = _run(script, home, token=tenant["user_raw"], args=("--client", "codex"), with_claude=False)
    assert again.code == 0 and f"unchanged: {config}" in again.out
    # a brain table pointing elsewhere is the user's to settle: refused with the table to use, nothing written
    config.write_text('[mcp_servers.brain]\nurl = "https://old.example/mcp"\n'
                      'bearer_token_env_var = "BRAIN_MCP_TOKEN"\n')
    before = config.read_text()
    refused = _run(script, home, token=tenant["user_raw"], args=("--client", "codex"), with_claude=False)
    assert refused.code != 0 and "already has [mcp_servers.brain] with other settings" in refused.err
    assert f'url = "{url}/mcp"' in refused.err and config.read_text() == before
    assert tenant["user_raw"] not in config.read_text()
    from sessions.models import Session as AgentSession

    assert not AgentSession.objects.filter(user=other["user"]).exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_claude_code_moved_by_claude_config_dir_is_configured_where_it_reads(live_server: object,
                                                                            tmp_path: Path) -> None:
    """With CLAUDE_CONFIG_DIR set, Claude Code keeps its user-scope servers in that folder's .claude.json; the
    entry went to ~/.claude.json, which that Claude Code never reads."""
    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    make_tenant("other@o.example", "Other App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    moved = tmp_path / "claude-work"
    config = _config_with_another_server(moved / ".claude.json")
    done = _run(script, home, token=tenant["user_raw"], with_claude=False,
                extra_env={"CLAUDE_CONFIG_DIR": str(moved)})
    assert done.code == 0 and f"updated: {config}" in done.out, done.out + done.err
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["other"] == {"url": "https://x.example/mcp"} and servers["brain"]["url"] == f"{url}/mcp"
    assert not (home / ".claude.json").exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_stdio_bridges_brain_url_does_not_redirect_the_installer(live_server: object, tmp_path: Path) -> None:
    """`brain mcp stdio` users export BRAIN_URL for their bridge; the installer configured that server instead of
    the one that served it. Only BRAIN_INSTALL_URL moves it, and a value that is no address is refused."""
    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    other = make_tenant("other@o.example", "Other App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    done = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor"), with_claude=False,
                extra_env={"BRAIN_URL": "http://127.0.0.1:9/elsewhere"})  # what a stdio bridge user exports
    assert done.code == 0, done.out + done.err
    servers = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert servers["brain"]["url"] == f"{url}/mcp"
    bad = _run(script, tmp_path / "home2", token=tenant["user_raw"], url="http://x/$(touch pwned)")
    assert bad.code == 1 and "BRAIN_INSTALL_URL must be the server's address" in bad.err
    assert not (tmp_path / "home2" / ".cursor").exists() and not Path("pwned").exists()
    from sessions.models import Session as AgentSession

    assert not AgentSession.objects.filter(user=other["user"]).exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_symlinked_config_is_updated_where_it_points(live_server: object, tmp_path: Path) -> None:
    """A dotfile manager's link stays a link and the file it points to gets the entry (it was replaced by a plain
    file, cut off from the managed copy)."""
    url = str(live_server.url)  # type: ignore[attr-defined]
    tenant = make_tenant("installer@i.example", "Installer App")
    script, home = _script(tmp_path, url), tmp_path / "home"
    managed = _config_with_another_server(home / "dotfiles" / "cursor-mcp.json")
    link = home / ".cursor" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(managed)
    done = _run(script, home, token=tenant["user_raw"], args=("--client", "cursor"), with_claude=False)
    assert done.code == 0, done.out + done.err
    assert link.is_symlink() and link.resolve() == managed.resolve()
    servers = json.loads(managed.read_text())["mcpServers"]
    assert set(servers) == {"other", "brain"} and servers["brain"]["url"] == f"{url}/mcp"
