"""The token wizard in a real Chromium: a freshly minted token's set-up switches between the brain and the
Cognibrain tool profiles without a round trip (the raw token is shown once), per client and system."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import Browser, Page

from tests.dashboard.test_browser import _shot, browser  # noqa: F401  (browser is a fixture)
from tests.factories import make_tenant

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tenants(live_server: Any) -> dict[str, Any]:
    """Both tenants and a signed-in cookie for the first, made before the browser starts: ORM calls inside
    Playwright's event loop would leave a connection open past the test."""
    mine, theirs = make_tenant("wizard@w.example", "Wizard App"), make_tenant("other@o.example", "Other App")
    client = Client()
    client.force_login(mine["user"])
    return {"mine": mine, "theirs": theirs, "cookie": client.cookies["sessionid"].value}


def _signed_in(browser: Browser, base: str, cookie: str) -> Page:  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.context.add_cookies([{"name": "sessionid", "value": cookie, "url": base}])
    return page


def _visible_panel(page: Page) -> str:
    panels = page.locator("section[data-client]:visible")
    assert panels.count() == 1
    return panels.first.inner_text()


def test_wizard_switches_profile_per_client(live_server: Any, tenants: dict[str, Any],
                                            browser: Browser) -> None:  # noqa: F811
    base, theirs = str(live_server.url), tenants["theirs"]
    page = _signed_in(browser, base, tenants["cookie"])
    page.goto(f"{base}/settings/tokens")
    page.get_by_label("Label").fill("cognibrain laptop")
    page.get_by_role("button", name="Mint token").click()
    raw = page.locator("#raw-token").inner_text().strip()
    assert theirs["user_token"].prefix not in page.content()  # the other tenant's tokens are not listed

    page.get_by_label("Client", exact=True).select_option("cursor")
    page.get_by_label("System", exact=True).select_option("linux")
    assert page.get_by_label("Tools", exact=True).input_value() == "brain"
    brain = _visible_panel(page)
    assert f'"url": "{base}/mcp"' in brain and '"brain": {' in brain and raw in brain
    assert "--client cursor\n" in brain and "--profile" not in brain

    page.get_by_label("Tools", exact=True).select_option("cognibrain")
    cog = _visible_panel(page)
    assert f'"url": "{base}/mcp/cognibrain"' in cog and '"cognibrain": {' in cog and raw in cog
    assert "onboard.sh | bash -s -- --client cursor --profile cognibrain" in cog
    _shot(page, "10-wizard-cognibrain")

    page.get_by_label("Client", exact=True).select_option("stdio")
    assert '"--profile",\n        "cognibrain"' in _visible_panel(page)
    page.get_by_label("System", exact=True).select_option("windows")
    page.get_by_label("Client", exact=True).select_option("gemini")
    assert "-Client gemini -Profile cognibrain" in _visible_panel(page)
    page.get_by_label("Tools", exact=True).select_option("brain")
    assert "-Profile" not in _visible_panel(page) and "/mcp/cognibrain" not in _visible_panel(page)


def test_setup_guide_preselects_the_profile(live_server: Any, tenants: dict[str, Any],
                                            browser: Browser) -> None:  # noqa: F811
    base, mine = str(live_server.url), tenants["mine"]
    page = _signed_in(browser, base, tenants["cookie"])
    page.goto(f"{base}/settings/setup?profile=cognibrain")
    page.get_by_label("Client", exact=True).select_option("claude-code")
    assert page.get_by_label("Tools", exact=True).input_value() == "cognibrain"
    text = _visible_panel(page)
    assert f"--scope user cognibrain {base}/mcp/cognibrain" in text and "<your-token>" in text
    assert mine["user_raw"] not in page.content()
