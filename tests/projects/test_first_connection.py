"""The issue's "done when": a new user signs up, mints a token, pastes the wizard's Claude Code command,
and a live MCP call with that token succeeds; revoking it stops the next call."""

from __future__ import annotations

import html
import re
import shlex
import subprocess
from pathlib import Path

import httpx
import pytest
from django.test import Client

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "first-connection", "version": "1"},
}}


def _sign_up_and_mint(browser: Client, base_url: str) -> tuple[str, str]:
    signup = browser.post("/accounts/signup/", {"email": "newbie@n.example", "password": "newbie long pass 31"})
    assert signup.status_code == 302
    page = browser.post("/settings/tokens", {"label": "laptop", "scope": "user"}, HTTP_HOST=base_url.split("//")[1],
                        follow=True)
    assert page.status_code == 200 and page.redirect_chain
    body = html.unescape(page.content.decode())
    raw = re.search(r'<code id="raw-token">(ebt_[^<]+)</code>', body)
    command = re.search(r"(claude mcp add --transport http [^\n<]+)", body)
    assert raw and command
    return raw.group(1), command.group(1)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_sign_up_mint_paste_and_call(live_server: object, tmp_path: Path) -> None:
    base_url = str(live_server.url).replace("localhost", "127.0.0.1")  # type: ignore[attr-defined]
    browser = Client()
    raw, command = _sign_up_and_mint(browser, base_url)
    assert f"{base_url}/mcp" in command
    # Paste the command into a shell where `claude` is a recorder and the token is exported.
    fake = tmp_path / "claude"
    fake.write_text('#!/usr/bin/env bash\nprintf "%s\\0" "$@" > "$(dirname "$0")/args"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "BRAIN_MCP_TOKEN": raw}
    subprocess.run(["bash", "-c", command], env=env, check=True, timeout=30)
    args = (tmp_path / "args").read_text().split("\0")[:-1]
    assert args[:8] == ["mcp", "add", "--transport", "http", "--scope", "user", "brain", f"{base_url}/mcp"]
    header = args[args.index("--header") + 1]
    assert header == f"Authorization: Bearer {raw}", shlex.join(args)
    # What Claude Code would send with that configuration: a live MCP call over HTTP.
    name, value = header.split(": ", 1)
    with httpx.Client(base_url=base_url, headers={**MCP_HEADERS, name: value}, timeout=30) as mcp:
        response = mcp.post("/mcp", json=INITIALIZE)
        assert response.status_code == 200 and response.json()["result"]["serverInfo"]["name"]
        session = {"Mcp-Session-Id": response.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-06-18"}
        listed = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
        assert "brain_get_user_style" in {t["name"] for t in listed.json()["result"]["tools"]}
        # Revoke on the tokens page: the very next call in the same MCP session is refused.
        tokens_page = browser.get("/settings/tokens").content.decode()
        token_id = re.search(r"/settings/tokens/([0-9a-f-]{36})/revoke", tokens_page)
        assert token_id is not None
        browser.post(f"/settings/tokens/{token_id.group(1)}/revoke")
        refused = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers=session)
        assert refused.status_code == 401
