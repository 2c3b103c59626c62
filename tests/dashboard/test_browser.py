"""The issue's journey in a real headless Chromium (Debian `chromium`, driven by Playwright):
sign up → mint a token → a session taught over MCP appears → approve its proposal → the rule is searchable.

Each page is saved as a screenshot under test-artifacts/dashboard/ (gitignored)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connections
from playwright.sync_api import Browser, Page, sync_playwright

from sessions.services.autoskill import autoskill_work
from sessions.services.jobs import session_job_run

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
CORRECTION = "Never commit the .env file; keep secrets in the vault"


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Browser]:
    assert shutil.which("chromium"), "install Debian's chromium (.ci/run does: apt-get install -y chromium)"
    # Playwright's sync API runs an event loop in this thread; the ORM calls here are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


UNLABELLED = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')).map(el => el.name)"""


def _shot(page: Page, name: str) -> None:
    """Saves the page and checks, on the way, that every form control has a label."""
    assert page.evaluate(UNLABELLED) == [], f"unlabelled controls on {name}"
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


class Mcp:
    """Plain JSON-RPC over HTTP with the minted token, as an agent's client sends it."""

    def __init__(self, base: str, raw: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30, headers={
            "Authorization": f"Bearer {raw}", "Accept": "application/json, text/event-stream"})
        init = self.http.post("/mcp", json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "journey", "version": "1"}}})
        assert init.status_code == 200, init.text
        self.http.headers.update({"Mcp-Session-Id": init.headers["Mcp-Session-Id"],
                                  "MCP-Protocol-Version": "2025-11-25"})
        self.http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        result = self.http.post("/mcp", json=body).json()["result"]
        assert not result.get("isError"), result
        return result["structuredContent"]


def _agent_session(base: str, raw: str) -> str:
    mcp = Mcp(base, raw)
    opened = mcp.call("brain_start_session", {"clientType": "claude_code", "prompt": "set up deployment secrets"})
    sid = opened["sessionId"]
    mcp.call("brain_log_event", {"sessionId": sid, "eventType": "user_correction",
                                 "payload": {"correction": CORRECTION}})
    mcp.call("brain_teach_knowledge", {"rule": "Run database migrations in a release step", "type": "recipe"})
    mcp.call("brain_report_session_outcome", {"sessionId": sid, "success": True, "userFeedback": "up"})
    return sid


def _run_autoskill(session_id: str) -> list[str]:
    """What the worker does for the closed session's autoskill job, in a thread of its own that closes its
    database connection (Playwright's loop makes this thread's connection context-local and unclosed)."""
    out: list[str] = []

    def work() -> None:
        try:
            out.append(session_job_run(session_id=session_id, name="autoskill", work=autoskill_work))
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return out


def test_sign_up_mint_session_approve_search(live_server: Any, browser: Browser) -> None:
    base = str(live_server.url)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/accounts/signup/")
    page.get_by_label("Email").fill("journey@j.example")
    page.get_by_label("Password").fill("a long journey password 42")
    _shot(page, "01-signup")
    page.get_by_role("button", name="Sign up").click()
    page.get_by_label("Label").fill("laptop")
    page.get_by_role("button", name="Mint token").click()
    raw = page.locator("#raw-token").inner_text().strip()
    assert raw.startswith("ebt_")
    _shot(page, "02-token-minted")

    sid = _agent_session(base, raw)
    assert _run_autoskill(sid) == ["ok"]

    page.get_by_role("link", name="Dashboard").click()
    overview_url = page.url
    _shot(page, "03-overview")
    page.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("link", name="set up deployment secrets").wait_for()
    _shot(page, "04-sessions")
    page.get_by_role("link", name="set up deployment secrets").click()
    assert CORRECTION in page.content()
    _shot(page, "05-session-detail")

    page.get_by_role("link", name="Review").click()
    assert "Never commit the .env file" in page.locator("pre").first.inner_text()
    _shot(page, "06-review")
    page.get_by_role("button", name="Approve").first.click()
    assert "Approved" in page.locator(".messages").inner_text()

    page.get_by_role("link", name="Knowledge", exact=True).click()
    page.get_by_label("Search").fill("commit env file secrets")
    page.get_by_role("button", name="Apply").click()
    hit = page.get_by_role("link", name="Never commit the .env file", exact=False).first
    hit.wait_for()
    page.locator("details summary").first.click()
    _shot(page, "07-knowledge-search")
    hit.click()
    assert "autoskill" in page.content()
    _shot(page, "08-knowledge-detail")

    page.get_by_role("link", name="Ask").click()
    page.get_by_label("Question").fill("how do I keep secrets out of the repository?")
    page.get_by_role("button", name="Ask").click()
    assert "Never commit the .env file" in page.locator("section").inner_text()
    _shot(page, "10-ask")
    for name, link in (("11-action-items", "Action items"), ("12-peer-card", "Peer card"), ("13-audit", "Audit")):
        page.get_by_role("link", name=link, exact=True).click()
        _shot(page, name)
    assert "Token minted" in page.content() and "Proposal approved" in page.content()

    phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone.context.add_cookies(page.context.cookies())
    phone.goto(overview_url)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # no sideways scrolling
    _shot(phone, "09-overview-phone")
    assert os.path.getsize(ARTIFACTS / "03-overview.png") > 0
