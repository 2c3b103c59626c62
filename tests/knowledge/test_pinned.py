"""Pinned rows never fade: decay (nightly or the dream cycle's) leaves them at full strength; pinning and
unpinning from the knowledge page; the other tenant can do neither."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from brain.errors import ValidationFailed
from knowledge.models import KnowledgeItem
from knowledge.nightly import NightlyScope
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.services.curate import knowledge_delete, knowledge_pin
from knowledge.services.decay import decay_scope_run
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture
def old_rows(tenant_a: Tenant) -> list[KnowledgeItem]:
    rows = knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content=f"Keep the release checklist step {i} in the wiki", confidence=0.9) for i in range(3)])
    KnowledgeItem.objects.filter(id__in=[r.id for r in rows]).update(last_used_at=timezone.now() - timedelta(days=400))
    return rows


def test_decay_never_lowers_a_pinned_row(tenant_a: Tenant, old_rows: list[KnowledgeItem]) -> None:
    pinned, plain, _ = old_rows
    KnowledgeItem.objects.filter(id=pinned.id).update(decay_score=0.2)
    assert knowledge_pin(principal=tenant_a.principal, item_id=pinned.id).decay_score == 1.0  # back to full
    scope = NightlyScope(project_id=tenant_a.project.id, owner_id=None)
    report = decay_scope_run(scope=scope, as_of=timezone.now() + timedelta(days=30))
    assert report.rows == 2
    pinned.refresh_from_db()
    plain.refresh_from_db()
    assert pinned.pinned and pinned.decay_score == 1.0 and plain.decay_score < 0.05 + 1e-6
    knowledge_pin(principal=tenant_a.principal, item_id=pinned.id, pinned=False)
    decay_scope_run(scope=scope, as_of=timezone.now() + timedelta(days=30))
    pinned.refresh_from_db()
    assert not pinned.pinned and pinned.decay_score < 0.05 + 1e-6


def test_only_live_rows_of_the_caller_are_pinned(tenant_a: Tenant, tenant_b: Tenant,
                                                 old_rows: list[KnowledgeItem]) -> None:
    from brain.errors import NotFound

    with pytest.raises(NotFound):
        knowledge_pin(principal=tenant_b.principal, item_id=old_rows[0].id)
    knowledge_delete(principal=tenant_a.principal, item_id=old_rows[1].id)
    with pytest.raises(ValidationFailed, match="only a live row"):
        knowledge_pin(principal=tenant_a.principal, item_id=old_rows[1].id)
    assert not KnowledgeItem.objects.filter(pinned=True).exists()


def test_pin_and_unpin_from_the_page(client: Client, tenant_a: Tenant, tenant_b: Tenant,
                                     old_rows: list[KnowledgeItem]) -> None:
    row = old_rows[0]
    pin = reverse("dash_knowledge_pin", args=[tenant_a.project.id, row.id])
    client.force_login(tenant_b.user)
    for project in (tenant_a.project.id, tenant_b.project.id):
        assert client.post(reverse("dash_knowledge_pin", args=[project, row.id])).status_code == 404
    client.force_login(tenant_a.user)
    page = client.post(pin, follow=True).content.decode()
    assert "Pinned: it never fades." in page and "<strong>pinned</strong>" in page and ">Unpin</button>" in page
    page = client.post(pin, {"unpin": "1"}, follow=True).content.decode()
    assert "Unpinned" in page and "Pin (never fades)" in page
    row.refresh_from_db()
    assert not row.pinned


def test_evolution_neither_ages_nor_folds_away_a_pinned_row(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from django.conf import settings
    from django.test import override_settings

    from knowledge.services.create import knowledge_create
    from knowledge.services.evolution import evolution_scope_run

    def row(content: str, days: int, **fields: object) -> KnowledgeItem:
        item = knowledge_create(owner=tenant_a.user, project=tenant_a.project,
                                draft=KnowledgeDraft(content=content, trigger="when writing code here"))
        when = timezone.now() - timedelta(days=days)
        KnowledgeItem.objects.filter(id=item.id).update(created_at=when, last_used_at=when, **fields)
        return item

    older = row("Use pytest fixtures instead of setUp methods in tests.", 10)
    twin = row("Use pytest fixtures instead of setUp methods in the tests.", 5, pinned=True)
    stale = row("Use class-based views for every Django endpoint.", 200, framework="django", pinned=True)
    llm = {**settings.BRAIN_LLM, "model": "", "openai_api_key": "", "anthropic_api_key": "", "dashscope_api_key": ""}
    with override_settings(BRAIN_LLM=llm):
        report = evolution_scope_run(scope=NightlyScope(project_id=tenant_a.project.id, owner_id=None),
                                     as_of=timezone.now())
    assert (report.merged, report.aged) == (0, 0)
    rows = {r.id: r for r in KnowledgeItem.objects.filter(id__in=[older.id, twin.id, stale.id])}
    assert rows[twin.id].superseded_by_id is None and rows[stale.id].confidence == stale.confidence
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def _export(tenant: Tenant) -> dict:
    import json

    from sessions.api.export import export_document

    return json.loads("".join(export_document(tenant.principal, sessions=False)))


def _import_text(tenant: Tenant, text: str) -> dict:
    from knowledge.services.imports import ImportFile, knowledge_import

    return knowledge_import(principal=tenant.principal, files=[ImportFile("export.json", text.encode())]).as_dict()


def test_pinned_survives_export_and_import(tenant_a: Tenant, tenant_b: Tenant, old_rows: list[KnowledgeItem]) -> None:
    import json

    knowledge_pin(principal=tenant_a.principal, item_id=old_rows[0].id)
    document = _export(tenant_a)
    assert document["format"] == "external-brain-export/2"
    flags = {row["rule"]: row["pinned"] for row in document["knowledge"]}
    assert flags == {r.content: r is old_rows[0] for r in old_rows}
    assert not any(row["pinned"] for row in _export(tenant_b)["knowledge"])  # the other tenant has none of it
    KnowledgeItem.objects.filter(owner=tenant_a.user).delete()
    out = _import_text(tenant_a, json.dumps(document))
    assert out["created"] == 3
    restored = {r.content: r.pinned for r in KnowledgeItem.objects.filter(owner=tenant_a.user)}
    assert restored == flags
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_import_refuses_a_pinned_flag_that_is_not_a_boolean(tenant_a: Tenant, old_rows: list[KnowledgeItem]) -> None:
    import json

    document = _export(tenant_a)
    KnowledgeItem.objects.filter(owner=tenant_a.user).delete()
    document["knowledge"][0]["pinned"] = "yes"
    out = _import_text(tenant_a, json.dumps(document))
    assert "pinned must be true or false" in json.dumps(out)
    assert not KnowledgeItem.objects.filter(owner=tenant_a.user).exists()
