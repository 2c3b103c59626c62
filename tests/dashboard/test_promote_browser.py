"""Promote in a real Chromium: on a project row's page the owner clicks "Promote to all my projects"; the row
becomes personal and shows up in another project of theirs, while the other tenant's pages never show it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import Browser

from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from projects.services.accounts import project_ensure_named
from tests.dashboard.test_browser import _shot, browser  # noqa: F401  (browser is a fixture)
from tests.factories import make_tenant

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
RULE = "Pin the Node version in .nvmrc for every repository"


@pytest.fixture
def world(live_server: Any) -> dict[str, Any]:
    """Made before the browser starts (ORM calls inside Playwright's loop would leak a connection)."""
    mine, theirs = make_tenant("promo@p.example", "Web App"), make_tenant("other@o.example", "Other App")
    second, _ = project_ensure_named(user=mine["user"], name="Api App")
    row = knowledge_create_many(owner=mine["user"], project=mine["project"],
                                drafts=[KnowledgeDraft(content=RULE, type="rule", confidence=0.9)])[0]
    cookies = {}
    for name, tenant in (("mine", mine), ("theirs", theirs)):
        client = Client()
        client.force_login(tenant["user"])
        cookies[name] = client.cookies["sessionid"].value
    return {"mine": mine, "theirs": theirs, "second": second, "row": row, "cookies": cookies}


def test_promote_button_moves_the_row_to_every_project(live_server: Any, world: dict[str, Any],
                                                       browser: Browser) -> None:  # noqa: F811
    base, mine, row = str(live_server.url), world["mine"], world["row"]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.context.add_cookies([{"name": "sessionid", "value": world["cookies"]["mine"], "url": base}])
    page.goto(f"{base}/dashboard/{world['second'].id}/knowledge/")
    assert RULE not in page.content()  # still the Web App's only
    page.goto(f"{base}/dashboard/{mine['project'].id}/knowledge/{row.id}/")
    assert "· project ·" in page.content()
    page.get_by_text("Promote to all my projects…").click()  # the disclosure that says what follows
    page.get_by_role("button", name="Promote to all my projects").click()
    page.get_by_text("Promoted: it now reaches every project of yours.").wait_for()
    assert "· personal ·" in page.content()
    assert page.get_by_role("button", name="Promote to all my projects").count() == 0
    _shot(page, "20-knowledge-promoted")
    page.goto(f"{base}/dashboard/{world['second'].id}/knowledge/")
    assert RULE in page.content()

    theirs = browser.new_page(viewport={"width": 1280, "height": 900})
    theirs.context.add_cookies([{"name": "sessionid", "value": world["cookies"]["theirs"], "url": base}])
    theirs.goto(f"{base}/dashboard/{world['theirs']['project'].id}/knowledge/")
    assert RULE not in theirs.content()
    response = theirs.goto(f"{base}/dashboard/{world['theirs']['project'].id}/knowledge/{row.id}/")
    assert response is not None and response.status == 404
