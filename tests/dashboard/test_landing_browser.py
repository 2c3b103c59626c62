"""A new user's first visit in a real Chromium, starting at `/`: the landing page says what this is and leads
to sign-up; signed in, `/` opens the dashboard, whose empty state leads to the token wizard; once an agent
has connected the empty state is gone."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.dashboard.test_browser import Mcp, _shot, browser  # noqa: F401  (browser is a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EMPTY = "No agent has connected yet"


def test_first_visit_starts_at_root(live_server: Any, browser: Browser) -> None:  # noqa: F811
    base = str(live_server.url)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/")
    assert page.get_by_role("heading", name="External Brain").is_visible()
    assert "memory for your AI coding agents" in page.content() and f"{base}/mcp" in page.content()
    assert page.get_by_role("link", name="Sign in").first.is_visible()
    _shot(page, "00-landing")
    page.get_by_role("main").get_by_role("link", name="Sign up").click()
    page.get_by_label("Email").fill("first@f.example")
    page.get_by_label("Password").fill("a long first-hour password 7")
    page.get_by_role("button", name="Sign up").click()
    page.get_by_label("Label").wait_for()

    page.goto(f"{base}/")
    assert "/dashboard/" in page.url
    assert page.get_by_role("heading", name=EMPTY).is_visible()
    _shot(page, "00-empty-dashboard")
    page.get_by_role("link", name="mint a token and follow the set-up steps for your client").click()
    page.get_by_label("Label").fill("laptop")
    page.get_by_role("button", name="Mint token").click()
    raw = page.locator("#raw-token").inner_text().strip()

    Mcp(base, raw).call("brain_start_session", {"clientType": "claude_code", "prompt": "first session"})
    page.goto(f"{base}/")
    assert "/dashboard/" in page.url and EMPTY not in page.content()

    page.get_by_role("button", name="Sign out").click()
    page.goto(f"{base}/")
    assert page.url.rstrip("/") == base and page.get_by_role("link", name="Sign in").first.is_visible()


def test_root_answers_get_only(client: Any) -> None:
    assert client.get("/").status_code == 200 and client.post("/").status_code == 405
