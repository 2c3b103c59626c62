"""The guard-decision page: the project's decisions with their reasons, filters, and nothing for another tenant."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from knowledge.guard_models import GuardDecision
from knowledge.selectors.guard_log import PAGE
from knowledge.services.guard import guard_decide, guard_rule_add
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def test_guard_page_lists_decisions(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern="dist/**",
                   text="Editing dist/ files is blocked by repo policy", alternative="edit src/ and rebuild")
    guard_decide(owner=tenant_a.user, project=tenant_a.project, action="edit dist/app.js")
    guard_decide(owner=tenant_a.user, project=tenant_a.project, action="edit src/app.ts")
    client.force_login(tenant_a.user)
    page = client.get(f"/dashboard/{tenant_a.project.id}/guard/").content.decode()
    assert "edit dist/app.js" in page and "edit src/app.ts" in page and "edit src/ and rebuild" in page
    blocked = client.get(f"/dashboard/{tenant_a.project.id}/guard/?only=blocked").content.decode()
    assert "edit dist/app.js" in blocked and "edit src/app.ts" not in blocked
    client.force_login(tenant_b.user)
    assert client.get(f"/dashboard/{tenant_a.project.id}/guard/").status_code == 404
    own = client.get(f"/dashboard/{tenant_b.project.id}/guard/").content.decode()
    assert "edit dist/app.js" not in own and "No guard decisions yet" in own


def test_every_decision_is_reached_once_even_among_decisions_of_one_instant(client: Client, tenant_a: Tenant,
                                                                             tenant_b: Tenant) -> None:
    """Decisions were ordered by time alone: a page boundary among decisions of one instant could show one twice
    and another never."""
    for n in range(PAGE * 5 // 2):
        guard_decide(owner=tenant_a.user, project=tenant_a.project, action=f"edit f-{n}")
    guard_decide(owner=tenant_b.user, project=tenant_b.project, action="edit f-999")
    GuardDecision.objects.filter(project=tenant_a.project).update(created_at=timezone.now())
    expected = [d.action for d in sorted(
        GuardDecision.objects.filter(project=tenant_a.project), key=lambda d: (d.created_at, d.pk), reverse=True)]
    client.force_login(tenant_a.user)
    seen: list[str] = []
    for page in range(1, 10):
        html = client.get(f"/dashboard/{tenant_a.project.id}/guard/?page={page}").content.decode()
        seen += re.findall(r"<code>(edit f-\d+)</code>", html)
        if "Older</a>" not in html:
            break
    assert seen == expected and len(set(seen)) == PAGE * 5 // 2 and "edit f-999" not in seen
