"""The Content-Security-Policy in a real Chromium: the pages' own scripts still run (token wizard, project
switcher, admin), nothing on them is reported as a violation, and a script injected without the nonce is
blocked. A second tenant's project never appears in the first one's switcher."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from projects.models import User
from tests.dashboard.test_browser import ARTIFACTS, _shot, browser  # noqa: F401  (browser is a fixture)
from tests.factories import ProjectFactory, make_tenant

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
INJECT = """() => { const s = document.createElement('script'); s.textContent = 'window.__injected = 1';
    document.body.appendChild(s); return window.__injected === 1; }"""


def watched_page(chromium: Browser) -> tuple[Page, list[str]]:
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    return page, violations


def injection_blocked(page: Page, violations: list[str]) -> bool:
    """Injects a script without the nonce: True when it did not run and was reported as a violation (then
    forgotten, so only unexpected violations remain in the list)."""
    ran = page.evaluate(INJECT)
    page.wait_for_timeout(200)  # console messages arrive asynchronously
    reported = [v for v in violations if "inline script" in v]
    for v in reported:
        violations.remove(v)
    return ran is False and len(reported) == 1


def sign_in(page: Page, base: str, path: str, email: str) -> None:
    page.goto(f"{base}{path}")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in" if "accounts" in path else "Log in").click()


def test_pages_scripts_run_under_the_policy_and_injected_ones_do_not(live_server: Any, browser: Browser) -> None:  # noqa: F811
    base = str(live_server.url)
    alice = make_tenant("alice@a.example", "Alpha App")
    second = ProjectFactory(user=alice["user"], name="Beta Service")
    make_tenant("bob@b.example", "Bravo App")
    page, violations = watched_page(browser)

    page.goto(f"{base}/")
    assert injection_blocked(page, violations)
    sign_in(page, base, "/accounts/login/", "alice@a.example")
    page.goto(f"{base}/settings/setup")
    # The wizard's inline script ran: it picked the OS from the user agent (the markup's first option is macOS)
    # and shows one client's steps of all it renders.
    assert page.locator("[data-wizard-os]").input_value() == "linux"
    assert page.locator("section[data-client]").count() > 1
    assert page.locator("section[data-client]:visible").count() == 1
    _shot(page, "csp-01-tokens")

    page.goto(f"{base}/dashboard/{alice['project'].id}/")
    options = page.locator("#project-switch option").all_inner_texts()
    assert options == ["Alpha App", "Beta Service"] or sorted(options) == ["Alpha App", "Beta Service"]
    page.select_option("#project-switch", label="Beta Service")
    assert f"/dashboard/{alice['project'].id}/" in page.url  # choosing an option does not leave the page (WCAG 3.2.2)
    page.click("#switch-go")
    page.wait_for_url(f"**/dashboard/{second.id}/**")
    assert injection_blocked(page, violations)
    _shot(page, "csp-02-dashboard")
    assert violations == []


def test_admin_works_under_the_policy(live_server: Any, browser: Browser) -> None:  # noqa: F811
    base = str(live_server.url)
    tenant = make_tenant("staff@a.example", "Alpha App")
    User.objects.filter(pk=tenant["user"].pk).update(is_staff=True, is_superuser=True)
    page, violations = watched_page(browser)
    sign_in(page, base, "/admin/login/", "staff@a.example")
    page.get_by_role("link", name="Users").first.click()
    page.get_by_role("link", name="staff@a.example").click()
    assert page.get_by_label("Email").input_value() == "staff@a.example"
    page.screenshot(path=str(ARTIFACTS / "csp-03-admin.png"))  # Django's own admin: its labels are not ours
    assert violations == []
