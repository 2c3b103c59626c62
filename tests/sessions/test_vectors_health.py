"""`brain doctor`'s vectors line: the rows that still wait for a vector of the current model, across every tenant
(an operator's count), failing once one has waited longer than the backfill should ever let it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from brain.cli import main
from knowledge.embeddings import LOCAL_MODEL_NAME
from knowledge.models import KnowledgeItem
from knowledge.services.backfill import vectors_waiting
from knowledge.services.knowledge_vectors import KNOWLEDGE
from knowledge.services.teach import knowledge_teach
from projects.scope import Principal
from sessions.models import SessionEvent
from sessions.services.event_vectors import EVENTS, VECTORS_OVERDUE_S, vectors_health
from sessions.services.events import session_event_record
from sessions.services.open import session_open
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _inline_event_vectors(settings: Any) -> None:
    settings.BRAIN_EVENT_VECTORS = "inline"  # each event has its vector once recorded; the tests take some away


def _events(tenant: Tenant, count: int) -> list[SessionEvent]:
    principal = Principal(user=tenant.user)
    session = session_open(principal=principal, project_id=str(tenant.project.pk), prompt="").session
    return [session_event_record(principal=principal, session_id=str(session.pk), event_type="note",
                                 payload={"text": f"migration {n} applied"}) for n in range(count)]


def test_every_row_embedded_is_reported_healthy(tenant_a: Tenant, tenant_b: Tenant) -> None:
    _events(tenant_a, 2)
    knowledge_teach(principal=Principal(user=tenant_b.user), rule="pin the base image digest")
    assert vectors_health() == (True, f"every row has its {LOCAL_MODEL_NAME} vector")


def test_rows_waiting_are_counted_with_the_oldest_and_fail_once_overdue(tenant_a: Tenant, tenant_b: Tenant) -> None:
    waiting_a = _events(tenant_a, 3)
    waiting_b = _events(tenant_b, 1)
    SessionEvent.objects.filter(pk__in=[e.pk for e in waiting_a[:2]]).update(embedding=None)
    SessionEvent.objects.filter(pk=waiting_b[0].pk).update(embedding=None)
    ok, detail = vectors_health()
    assert ok and detail.startswith("session events: 3 without a vector (the oldest for ")
    assert vectors_waiting(EVENTS, LOCAL_MODEL_NAME).missing == 3  # both tenants' rows: the operator's count
    late = timezone.now() - timedelta(seconds=VECTORS_OVERDUE_S + 120)
    SessionEvent.objects.filter(pk=waiting_b[0].pk).update(created_at=late)
    ok, detail = vectors_health()
    assert not ok and "the oldest for 12 min" in detail and "`brain embeddings backfill`" in detail
    SessionEvent.objects.filter(embedding__isnull=True).delete()
    assert vectors_health()[0] is True


def test_another_models_vectors_are_reported_without_failing(tenant_a: Tenant, tenant_b: Tenant) -> None:
    taught = knowledge_teach(principal=Principal(user=tenant_a.user), rule="run migrations before the deploy")
    KnowledgeItem.objects.filter(pk=taught.item.pk).update(
        embedding_model="older-model", created_at=timezone.now() - timedelta(days=30))
    assert vectors_waiting(KNOWLEDGE, LOCAL_MODEL_NAME).other_model == 1
    ok, detail = vectors_health()
    assert ok and detail == "knowledge items: 1 with another model's, to be re-embedded by the backfill"
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_no_vector_is_owed_with_embeddings_off(tenant_a: Tenant, tenant_b: Tenant) -> None:
    SessionEvent.objects.filter(pk__in=[e.pk for e in _events(tenant_a, 1)]).update(embedding=None)
    with override_settings(BRAIN_EMBEDDINGS_PROVIDER="none"):
        ok, detail = vectors_health()
    assert ok and detail.startswith("none expected")


def test_doctor_prints_the_vectors_line(capsys: pytest.CaptureFixture[str], tenant_a: Tenant) -> None:
    SessionEvent.objects.filter(pk__in=[e.pk for e in _events(tenant_a, 1)]).update(
        embedding=None, created_at=timezone.now() - timedelta(hours=3))
    assert main(["doctor"]) == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if " vectors " in line)
    assert line.startswith("FAIL vectors") and "3 h 0 min" in line
