"""Set-up instructions per MCP client and OS: the single source of the token wizard and the docs.

Each client's entry is the command or config file that client documents today for a remote
Streamable HTTP server with a bearer header. Files that may live in a repository reference the
token through an environment variable (or an input prompt) in the syntax that client expands;
only commands typed into a terminal ever contain the raw token.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

TOKEN_ENV = "BRAIN_MCP_TOKEN"
AUTH_HEADER_ENV = "BRAIN_AUTH_HEADER"
SERVER_NAME = "brain"
COGNIBRAIN_SERVER_NAME = "cognibrain"
PLACEHOLDER = "<your-token>"
OSES: dict[str, str] = {"macos": "macOS", "linux": "Linux", "windows": "Windows (PowerShell)"}


@dataclass(frozen=True)
class Step:
    title: str
    body: str
    language: str  # bash | powershell | json | toml
    path: str = ""  # set when the step is a file to create or merge into
    note: str = ""


@dataclass(frozen=True)
class Client:
    id: str
    name: str
    docs_url: str
    installer: bool  # /api/onboard.sh can configure it
    steps: Callable[[str, str, str], list[Step]]  # (os, mcp url, base url) -> client-specific steps


def _name(mcp: str) -> str:
    """The server entry's name: one per profile, so both can sit side by side in one client's config."""
    return COGNIBRAIN_SERVER_NAME if mcp.endswith(COGNIBRAIN_PATH) else SERVER_NAME


def _json(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"


def _home(os_id: str, rel: str) -> str:
    return f"%USERPROFILE%\\{rel.replace('/', chr(92))}" if os_id == "windows" else f"~/{rel}"


def _project(os_id: str, rel: str) -> str:
    return rel.replace("/", "\\") if os_id == "windows" else rel


def _claude(os_id: str, mcp: str, base: str) -> list[Step]:
    var = f"$env:{TOKEN_ENV}" if os_id == "windows" else f"${TOKEN_ENV}"
    shell = "powershell" if os_id == "windows" else "bash"
    project_file = {"mcpServers": {_name(mcp): {
        "type": "http", "url": mcp, "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"},
    }}}
    quiet = "2>$null" if os_id == "windows" else "2>/dev/null || true"
    return [
        # `claude mcp add` refuses a name it already has: the entry is removed first, so a new token (or a second
        # run) replaces it.
        Step("Add the server for your user", language=shell,
             body=f'claude mcp remove --scope user {_name(mcp)} {quiet}\n'
                  f'claude mcp add --transport http --scope user {_name(mcp)} {mcp} '
                  f'--header "Authorization: Bearer {var}"\nclaude mcp list\n'),
        Step("Or share it with the repository", language="json", path=_project(os_id, ".mcp.json"),
             body=_json(project_file),
             note=f"Claude Code expands ${{{TOKEN_ENV}}} from each developer's environment."),
    ]


def _cursor(os_id: str, mcp: str, base: str) -> list[Step]:
    data = {"mcpServers": {_name(mcp): {"url": mcp, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}}}}
    return [Step("Add to the project's Cursor config", language="json", path=_project(os_id, ".cursor/mcp.json"),
                 body=_json(data), note=f"Or {_home(os_id, '.cursor/mcp.json')} for every project. Restart Cursor.")]


def _windsurf(os_id: str, mcp: str, base: str) -> list[Step]:
    data = {"mcpServers": {_name(mcp): {
        "serverUrl": mcp, "headers": {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"},
    }}}
    return [Step("Merge into Windsurf's MCP config", language="json",
                 path=_home(os_id, ".codeium/windsurf/mcp_config.json"), body=_json(data),
                 note="Then press Refresh in Cascade's MCP panel.")]


def _vscode(os_id: str, mcp: str, base: str) -> list[Step]:
    data = {
        "inputs": [{"type": "promptString", "id": "brain-token", "description": "External Brain token",
                    "password": True}],
        "servers": {_name(mcp): {
            "type": "http", "url": mcp, "headers": {"Authorization": "Bearer ${input:brain-token}"},
        }},
    }
    return [Step("Add to the workspace", language="json", path=_project(os_id, ".vscode/mcp.json"), body=_json(data),
                 note="VS Code asks for the token once and stores it in its secret storage; use Copilot's agent mode.")]


def _codex(os_id: str, mcp: str, base: str) -> list[Step]:
    body = f'[mcp_servers.{_name(mcp)}]\nurl = "{mcp}"\nbearer_token_env_var = "{TOKEN_ENV}"\n'
    return [Step("Append to Codex's config", language="toml", path=_home(os_id, ".codex/config.toml"), body=body,
                 note=f"Codex reads the token from ${TOKEN_ENV} when it starts; check with `codex mcp list`.")]


def _gemini(os_id: str, mcp: str, base: str) -> list[Step]:
    data = {"mcpServers": {_name(mcp): {"httpUrl": mcp, "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}}}
    return [Step("Merge into Gemini CLI's settings", language="json", path=_home(os_id, ".gemini/settings.json"),
                 body=_json(data), note="Check with /mcp inside Gemini CLI.")]


def brain_command() -> list[str]:
    """This install's `brain` command as an absolute path, since clients start commands without the user's PATH:
    beside the interpreter (a venv, `make run`), in the scheme's or the user scheme's scripts folder (`pip install
    --user`, a distribution's /usr/local/bin), on PATH; else the interpreter running the module."""
    folders: list[str | Path] = [Path(sys.executable).parent, sysconfig.get_path("scripts"),
                                 sysconfig.get_path("scripts", f"{os.name}_user")]
    for folder in folders:
        script = Path(folder) / "brain"
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    found = shutil.which("brain")
    return [str(Path(found).absolute())] if found else [sys.executable, "-P", "-m", "brain.cli"]


def _stdio(os_id: str, mcp: str, base: str) -> list[Step]:
    command, *prefix = brain_command()
    args = [*prefix, "mcp", "stdio"] + (["--profile", "cognibrain"] if mcp.endswith(COGNIBRAIN_PATH) else [])
    data = {"mcpServers": {_name(mcp): {"command": command, "args": args, "env": {"BRAIN_URL": base}}}}
    return [Step("Add a command server to your client", language="json", path="your client's MCP config file",
                 body=_json(data),
                 note=f"{' '.join([command, *prefix])} runs this server's `brain` command; on another machine use "
                      f"the output of `command -v brain` there. It reads {TOKEN_ENV} from the environment it "
                      "inherits and forwards each message to this server.")]


def _mcp_remote(os_id: str, mcp: str, base: str) -> list[Step]:
    args = ["-y", "mcp-remote", mcp, "--header", f"Authorization:${{{AUTH_HEADER_ENV}}}"]
    # mcp-remote refuses plain http except to localhost and 127.0.0.1 (a LAN brain is http://<host>:8000).
    url = urlsplit(mcp)
    if url.scheme == "http" and url.hostname not in ("localhost", "127.0.0.1"):
        args.append("--allow-http")
    data = {"mcpServers": {_name(mcp): {"command": "npx", "args": args}}}
    return [Step("Add a command server to your client", language="json", path="your client's MCP config file",
                 body=_json(data),
                 note=f"Needs Node.js 18+. mcp-remote fills ${{{AUTH_HEADER_ENV}}} from its environment "
                      "(no space after the colon: some clients split arguments on spaces).")]


CLIENTS: dict[str, Client] = {c.id: c for c in [
    Client("claude-code", "Claude Code", "https://code.claude.com/docs/en/mcp", True, _claude),
    Client("cursor", "Cursor", "https://cursor.com/docs/context/mcp", True, _cursor),
    Client("windsurf", "Windsurf", "https://docs.windsurf.com/windsurf/cascade/mcp", True, _windsurf),
    Client("vscode", "VS Code with GitHub Copilot",
           "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration", False, _vscode),
    Client("codex", "Codex CLI", "https://developers.openai.com/codex/mcp", True, _codex),
    Client("gemini", "Gemini CLI", "https://geminicli.com/docs/tools/mcp-server/", True, _gemini),
    Client("stdio", "Any client: brain mcp stdio", "", False, _stdio),
    Client("mcp-remote", "Any client: npx mcp-remote", "https://www.npmjs.com/package/mcp-remote", False, _mcp_remote),
]}


ENV_DIR = "~/.config/external-brain"
ENV_FILE = ENV_DIR + "/env"
ENV_FILE_REF = ".config/external-brain/env"
SOURCE_LINE = '[ -r "$HOME/.config/external-brain/env" ] && . "$HOME/.config/external-brain/env"'


def env_step(*, os_id: str, token: str | None, client_id: str) -> Step:
    """Keeps the token in the user's environment, where config files and the installer read it."""
    raw = token or PLACEHOLDER
    name, value = (AUTH_HEADER_ENV, f"Bearer {raw}") if client_id == "mcp-remote" else (TOKEN_ENV, raw)
    if os_id == "windows":
        body = f"$env:{name} = '{value}'\n[Environment]::SetEnvironmentVariable('{name}', '{value}', 'User')\n"
        return Step("Keep the token in your environment", body, "powershell",
                    note="The second line makes it permanent for new terminals and apps.")
    # A private file (mode 600) the profile sources, never the token in the profile itself; shell builtins
    # only (printf, echo), so the token is on no process's command line.
    rc = "~/.zshrc" if os_id == "macos" else "~/.bashrc"
    body = (f"mkdir -p {ENV_DIR} && (umask 077; printf \"export {name}='%s'\\n\" '{value}' > {ENV_FILE})\n"
            f"grep -qF '{ENV_FILE_REF}' {rc} 2>/dev/null || echo '{SOURCE_LINE}' >> {rc}\n"
            f"export {name}='{value}'\n")
    note = (f"The token lives in {ENV_FILE}, readable by you only; {rc} sources it in new terminals. "
            "The client's own secret store, where it has one, is just as good.")
    if os_id == "macos":
        body += f"launchctl setenv {name} '{value}'\n"
        note += " launchctl passes it to apps started from the Dock."
    return Step("Keep the token in your environment", body, "bash", note=note)


def installer_step(*, os_id: str, base_url: str, client_id: str, profile: str = "brain") -> Step:
    if os_id == "windows":
        flag = " -Profile cognibrain" if profile == "cognibrain" else ""
        body = f"& ([scriptblock]::Create((irm {base_url}/api/onboard.ps1))) -Client {client_id}{flag}\n"
        return Step("Or let the installer do it and test the connection", body, "powershell")
    flag = " --profile cognibrain" if profile == "cognibrain" else ""
    body = f"curl -fsSL {base_url}/api/onboard.sh | bash -s -- --client {client_id}{flag}\n"
    return Step("Or let the installer do it and test the connection", body, "bash")


PROFILES = {"brain": "Brain tools (/mcp)", "cognibrain": "Cognibrain tools (/mcp/cognibrain)"}
COGNIBRAIN_PATH = "/mcp/cognibrain"


def setup_steps(*, client_id: str, os_id: str, base_url: str, token: str | None = None,
                profile: str = "brain") -> list[Step]:
    """Everything a user runs or writes to connect `client_id` on `os_id` to the server at base_url, for
    the brain_* tools (`/mcp`) or the cognibrain_* tools (`/mcp/cognibrain`)."""
    if profile not in PROFILES:
        raise KeyError(f"unknown profile {profile!r}")
    if client_id not in CLIENTS or os_id not in OSES:
        raise KeyError(f"unknown client {client_id!r} or OS {os_id!r}")
    client, base = CLIENTS[client_id], base_url.rstrip("/")
    steps = [] if client_id == "vscode" else [env_step(os_id=os_id, token=token, client_id=client_id)]
    steps += client.steps(os_id, f"{base}{COGNIBRAIN_PATH}" if profile == "cognibrain" else f"{base}/mcp", base)
    if client.installer:
        steps.append(installer_step(os_id=os_id, base_url=base, client_id=client_id, profile=profile))
    return steps
