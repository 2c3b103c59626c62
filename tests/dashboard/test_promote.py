"""Promote from the knowledge page: the owner's row moves to their scope; nobody else can, nothing leaks."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import KnowledgeItem
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from projects.models import AuditEvent
from projects.services.accounts import project_ensure_named
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def row(tenant_a: Tenant) -> KnowledgeItem:
    return knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content="Run the linters before pushing", type="rule", confidence=0.9)])[0]


def test_the_owner_promotes_from_the_page(client: Client, tenant_a: Tenant, tenant_b: Tenant,
                                          row: KnowledgeItem) -> None:
    client.force_login(tenant_a.user)
    detail = reverse("dash_knowledge_detail", args=[tenant_a.project.id, row.id])
    promote = reverse("dash_knowledge_promote", args=[tenant_a.project.id, row.id])
    block = re.search(r"<details[^>]*><summary>Promote to all my projects…</summary>(.*?)</details>",
                      client.get(detail).content.decode(), re.S)
    assert block and promote in block.group(1) and "cannot be moved back" in block.group(1)  # it asks first
    page = client.post(promote, follow=True).content.decode()
    assert "Promoted: it now reaches every project of yours." in page and promote not in page  # no second button
    row.refresh_from_db()
    assert row.project_id is None and row.owner_id == tenant_a.user.id
    assert AuditEvent.objects.filter(actor=tenant_a.user, action="knowledge.promoted").count() == 1
    other, _ = project_ensure_named(user=tenant_a.user, name="Second App")
    assert "Run the linters" in client.get(reverse("dash_knowledge", args=[other.id])).content.decode()
    assert client.post(promote, follow=True).status_code == 200  # again: unchanged, no second audit row
    assert AuditEvent.objects.filter(action="knowledge.promoted").count() == 1


def test_the_other_tenant_cannot_promote(client: Client, tenant_a: Tenant, tenant_b: Tenant,
                                         row: KnowledgeItem) -> None:
    client.force_login(tenant_b.user)
    for project in (tenant_a.project.id, tenant_b.project.id):
        assert client.post(reverse("dash_knowledge_promote", args=[project, row.id])).status_code == 404
    assert client.get(reverse("dash_knowledge_promote", args=[tenant_b.project.id, row.id])).status_code == 405
    row.refresh_from_db()
    assert row.project_id == tenant_a.project.id
    assert not AuditEvent.objects.filter(action="knowledge.promoted").exists()
