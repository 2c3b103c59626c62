"""The wizard's set-up per client and OS, checked against each client's documented config format.

Formats (remote Streamable HTTP server with a bearer header), as documented by each client:
Claude Code `.mcp.json` mcpServers.<n>.{type: "http", url, headers} with ${VAR} expansion;
Cursor `mcp.json` mcpServers.<n>.{url, headers} with ${env:VAR}; Windsurf `mcp_config.json`
mcpServers.<n>.{serverUrl, headers} with ${env:VAR}; VS Code `.vscode/mcp.json`
servers.<n>.{type: "http", url, headers} plus inputs[] referenced as ${input:id}; Codex
`config.toml` [mcp_servers.<n>] url + bearer_token_env_var; Gemini CLI `settings.json`
mcpServers.<n>.{httpUrl, headers} with $VAR/${VAR}; mcp-remote `--header Name:${VAR}`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from projects.clients import CLIENTS, OSES, TOKEN_ENV, brain_command, setup_steps

BASE = "https://brain.example.com"
MCP = f"{BASE}/mcp"
TOKEN = "ebt_0123abcd_SECRETsecretSECRETsecretSECRETsecret0000"
SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or "shellcheck"


def _files(client_id: str, os_id: str) -> dict[str, str]:
    steps = setup_steps(client_id=client_id, os_id=os_id, base_url=BASE + "/", token=TOKEN)
    return {s.path: s.body for s in steps if s.path}


def _server(doc: dict, container: str = "mcpServers") -> dict:
    assert list(doc[container]) == ["brain"]
    return doc[container]["brain"]


@pytest.mark.parametrize("os_id", list(OSES))
def test_every_file_snippet_parses_and_never_holds_the_token(os_id: str) -> None:
    for client_id in CLIENTS:
        for path, body in _files(client_id, os_id).items():
            assert TOKEN not in body, (client_id, path)
            if path.endswith(".toml"):
                tomllib.loads(body)
            else:
                json.loads(body)


@pytest.mark.parametrize("os_id", list(OSES))
def test_documented_shapes(os_id: str) -> None:
    sep = "\\" if os_id == "windows" else "/"
    claude = json.loads(_files("claude-code", os_id)[".mcp.json"])
    assert _server(claude) == {"type": "http", "url": MCP, "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}
    cursor = json.loads(_files("cursor", os_id)[f".cursor{sep}mcp.json"])
    assert _server(cursor) == {"url": MCP, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}}
    windsurf_path = ("%USERPROFILE%\\" if os_id == "windows" else "~/") + f".codeium{sep}windsurf{sep}mcp_config.json"
    windsurf = json.loads(_files("windsurf", os_id)[windsurf_path])
    assert _server(windsurf) == {"serverUrl": MCP, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}}
    vscode = json.loads(_files("vscode", os_id)[f".vscode{sep}mcp.json"])
    server = _server(vscode, "servers")
    assert server["type"] == "http" and server["url"] == MCP
    (prompt,) = vscode["inputs"]
    assert prompt["type"] == "promptString" and prompt["password"] is True
    assert server["headers"]["Authorization"] == f"Bearer ${{input:{prompt['id']}}}"
    (codex_body,) = _files("codex", os_id).values()
    assert tomllib.loads(codex_body) == {"mcp_servers": {"brain": {"url": MCP, "bearer_token_env_var": TOKEN_ENV}}}
    (gemini_body,) = _files("gemini", os_id).values()
    gemini = _server(json.loads(gemini_body))
    assert gemini == {"httpUrl": MCP, "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}
    (stdio_body,) = _files("stdio", os_id).values()
    command = str(Path(sys.executable).with_name("brain"))  # absolute: clients start it without the user's PATH
    assert Path(command).is_absolute() and Path(command).exists() and brain_command() == [command]
    assert _server(json.loads(stdio_body)) == {"command": command, "args": ["mcp", "stdio"], "env": {"BRAIN_URL": BASE}}
    (remote_body,) = _files("mcp-remote", os_id).values()
    remote = _server(json.loads(remote_body))
    assert remote["command"] == "npx" and remote["args"][:3] == ["-y", "mcp-remote", MCP]
    assert remote["args"][3:] == ["--header", "Authorization:${BRAIN_AUTH_HEADER}"]


def test_commands_carry_the_token_only_in_the_terminal() -> None:
    unix = setup_steps(client_id="claude-code", os_id="linux", base_url=BASE, token=TOKEN)
    assert f"printf \"export {TOKEN_ENV}='%s'\\n\" '{TOKEN}' > ~/.config/external-brain/env" in unix[0].body
    assert ">> ~/.bashrc" in unix[0].body and TOKEN not in unix[0].body.split("\n")[1]  # the profile only sources
    assert unix[1].body.splitlines()[:2] == [
        "claude mcp remove --scope user brain 2>/dev/null || true",
        f'claude mcp add --transport http --scope user brain {MCP} --header "Authorization: Bearer ${TOKEN_ENV}"',
    ]
    assert unix[-1].body == f"curl -fsSL {BASE}/api/onboard.sh | bash -s -- --client claude-code\n"
    win = setup_steps(client_id="claude-code", os_id="windows", base_url=BASE, token=TOKEN)
    assert f"[Environment]::SetEnvironmentVariable('{TOKEN_ENV}', '{TOKEN}', 'User')" in win[0].body
    assert f'--header "Authorization: Bearer $env:{TOKEN_ENV}"' in win[1].body
    assert win[-1].body == f"& ([scriptblock]::Create((irm {BASE}/api/onboard.ps1))) -Client claude-code\n"
    mac = setup_steps(client_id="cursor", os_id="macos", base_url=BASE, token=TOKEN)
    assert f"launchctl setenv {TOKEN_ENV} '{TOKEN}'" in mac[0].body
    remote = setup_steps(client_id="mcp-remote", os_id="linux", base_url=BASE, token=TOKEN)
    assert f"printf \"export BRAIN_AUTH_HEADER='%s'\\n\" 'Bearer {TOKEN}'" in remote[0].body


FAKE_CLAUDE = """#!/usr/bin/env bash
# Keeps server names in $HOME/servers and refuses a name it has, as `claude mcp add` does.
names="$HOME/servers"; touch "$names"
case "$2" in
  add) if grep -qx "$7" "$names"; then echo "MCP server $7 already exists" >&2; exit 1; fi; echo "$7" >> "$names" ;;
  remove) if ! grep -qx "$5" "$names"; then echo "No MCP server named $5" >&2; exit 1; fi
          grep -vx "$5" "$names" > "$names.new"; mv "$names.new" "$names" ;;
esac
"""


def test_the_claude_step_can_run_again_with_a_new_token(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "claude").write_text(FAKE_CLAUDE)
    (tmp_path / "bin" / "claude").chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", TOKEN_ENV: TOKEN}
    for _ in range(2):
        body = setup_steps(client_id="claude-code", os_id="linux", base_url=BASE, token=TOKEN)[1].body
        done = subprocess.run(["bash", "-c", body], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and "already exists" not in done.stderr, done.stderr
    assert (tmp_path / "servers").read_text() == "brain\n"


@pytest.mark.parametrize(("base", "allowed"), [("http://192.168.1.20:8000", True), ("http://brain.lan", True),
                                               ("http://127.0.0.1:8000", False), ("http://localhost:8000", False),
                                               ("https://brain.example.com", False)])
def test_mcp_remote_is_allowed_plain_http_off_this_machine(base: str, allowed: bool) -> None:
    (step,) = [s for s in setup_steps(client_id="mcp-remote", os_id="linux", base_url=base, token=TOKEN) if s.path]
    args = _server(json.loads(step.body))["args"]
    assert args[:5] == ["-y", "mcp-remote", f"{base}/mcp", "--header", "Authorization:${BRAIN_AUTH_HEADER}"]
    assert ("--allow-http" in args) is allowed


def test_the_brain_command_is_found_where_pip_put_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `pip install --user` puts `brain` in the user scheme's scripts folder, not beside the interpreter; with
    no script anywhere, the interpreter runs the module."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    user_bin = tmp_path / "user-bin"
    user_bin.mkdir()
    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, scheme=None: str(user_bin if scheme else tmp_path / "x"))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert brain_command() == [str(tmp_path / "python3"), "-P", "-m", "brain.cli"]
    (user_bin / "brain").write_text("#!/bin/sh\n")
    (user_bin / "brain").chmod(0o755)
    assert brain_command() == [str(user_bin / "brain")]
    assert real("scripts")  # the real lookup answers on this machine
    stdio = [s for s in setup_steps(client_id="stdio", os_id="linux", base_url=BASE, token=TOKEN) if s.path]
    assert _server(json.loads(stdio[0].body))["command"] == str(user_bin / "brain")


def test_the_env_step_writes_a_private_file_the_profile_sources(tmp_path) -> None:
    """The Linux env step, run as shown in a throwaway HOME: a mode-600 file, one source line (kept once on a
    second run), the token nowhere in the profile, and a new shell sees the variable."""
    body = setup_steps(client_id="cursor", os_id="linux", base_url=BASE, token=TOKEN)[0].body
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for _ in range(2):
        subprocess.run(["bash", "-c", body], env=env, check=True, timeout=30)
    secret = tmp_path / ".config" / "external-brain" / "env"
    assert os.stat(secret).st_mode & 0o077 == 0
    bashrc = (tmp_path / ".bashrc").read_text()
    assert TOKEN not in bashrc and bashrc.count("external-brain/env") == 2  # one line naming the file twice
    seen = subprocess.run(["bash", "-ic", f"echo ${TOKEN_ENV}"], env=env, capture_output=True, text=True, timeout=30)
    assert seen.stdout.strip() == TOKEN


def test_without_a_token_the_guide_shows_a_placeholder() -> None:
    steps = setup_steps(client_id="cursor", os_id="linux", base_url=BASE)
    assert "<your-token>" in steps[0].body


def test_unknown_client_or_os_is_refused() -> None:
    with pytest.raises(KeyError):
        setup_steps(client_id="emacs", os_id="linux", base_url=BASE)
    with pytest.raises(KeyError):
        setup_steps(client_id="cursor", os_id="beos", base_url=BASE)


def test_shell_commands_pass_shellcheck(tmp_path: Path) -> None:
    script = ["#!/usr/bin/env bash"]
    for client_id in CLIENTS:
        for os_id in ("macos", "linux"):
            steps = setup_steps(client_id=client_id, os_id=os_id, base_url=BASE, token=TOKEN)
            script += [s.body for s in steps if s.language == "bash"]
    path = tmp_path / "wizard.sh"
    path.write_text("\n".join(script))
    result = subprocess.run([SHELLCHECK, "-S", "warning", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
