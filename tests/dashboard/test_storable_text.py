"""A NUL in a dashboard form field is a form error on the page (never a 500), and nothing is stored."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import KnowledgeItem, PeerCard
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("field", ["rule", "trigger", "rationale", "tags"])
def test_teach_form_refuses_a_nul(client: Client, tenant_a: Tenant, tenant_b: Tenant, field: str) -> None:
    client.force_login(tenant_a.user)
    data = {"rule": "Pin the Node version in CI", "type": "heuristic", "trigger": "", "rationale": "", "tags": "ci"}
    data[field] += " with \x00 inside"
    response = client.post(reverse("dash_knowledge_teach", args=[tenant_a.project.id]), data)
    assert response.status_code == 400 and "Teach a rule" in response.content.decode()
    form = response.context["form"]
    assert form.errors and any("Null characters" in e or "NUL" in e for errs in form.errors.values() for e in errs)
    assert not KnowledgeItem.objects.exists()


def test_other_forms_refuse_a_nul_without_a_500(client: Client, tenant_a: Tenant) -> None:
    client.force_login(tenant_a.user)
    project = tenant_a.project.id
    oracle = client.post(reverse("dash_oracle", args=[project]), {"question": "how did I \x00 deploy?"})
    assert oracle.status_code == 200 and oracle.context["form"].errors and oracle.context["answer"] is None
    search = client.get(reverse("dash_knowledge", args=[project]), {"q": "deploy \x00"})
    assert search.status_code == 200
    card = client.post(reverse("dash_peer_card"), {"facts": "editor: vi\x00m"})
    assert card.status_code in (200, 400) and card.context["form"].errors
    assert not PeerCard.objects.filter(user=tenant_a.user).exclude(facts={}).exists()
