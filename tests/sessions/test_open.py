"""Opening sessions: project precedence, the token matrix, inject-at-open (fail-soft) and action items."""

from __future__ import annotations

import logging
import uuid

import pytest
from django.test import override_settings

from brain.errors import ForbiddenProject, ValidationFailed
from knowledge.models import KnowledgeItem, ReviewStatus
from knowledge.services.teach import knowledge_teach
from projects.models import Project
from projects.scope import Principal
from projects.services.accounts import user_create
from sessions.models import ApplicationRole, Session, SessionKnowledgeApplication
from sessions.services.open import session_open
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
PROMPT = "add a pydantic validator for the signup form"


def _teach_rules(tenant: Tenant) -> tuple[str, str]:
    a = knowledge_teach(principal=tenant.principal, project_id=str(tenant.project.id), type="reflex",
                        trigger="writing pydantic validators", rule="use field_validator with mode='after'")
    b = knowledge_teach(principal=tenant.principal, project_id=str(tenant.project.id), type="recipe",
                        trigger="deploying with docker compose", rule="run migrations in a one-off container")
    return str(a.item.id), str(b.item.id)


def test_precedence_user_token(tenant_a: Tenant, tenant_b: Tenant) -> None:
    p = tenant_a.principal
    assert session_open(principal=p).project_source == "first_project_fallback"
    opened = session_open(principal=p, project_id=str(tenant_a.project.id), project_name="Other")
    assert (opened.session.project_id, opened.project_source) == (tenant_a.project.id, "project_id")
    named = session_open(principal=p, project_name="acme robotics", framework="react")
    again = session_open(principal=p, project_name="ACME Robotics")
    assert named.session.project_id == again.session.project_id and named.project_source == "project_name"
    assert Project.objects.get(id=named.session.project_id).framework == "react"
    with pytest.raises(ForbiddenProject):
        session_open(principal=p, project_id=str(tenant_b.project.id))
    with pytest.raises(ForbiddenProject):
        session_open(principal=p, project_id=str(uuid.uuid4()))
    with pytest.raises(ValidationFailed):
        session_open(principal=p, project_id="not-a-uuid")


def test_precedence_project_token_and_lazy_default(tenant_a: Tenant) -> None:
    p = tenant_a.project_principal
    opened = session_open(principal=p, project_name="Somewhere Else")
    assert (opened.session.project_id, opened.project_source) == (tenant_a.project.id, "token_scope")
    assert not Project.objects.filter(name="Somewhere Else").exists()
    assert session_open(principal=p, project_id=str(tenant_a.project.id)).project_source == "token_scope"
    other = session_open(principal=tenant_a.principal, project_name="Second").session.project
    with pytest.raises(ForbiddenProject):
        session_open(principal=p, project_id=str(other.id))
    fresh = Principal(user=user_create(email="new@c.example"))
    opened = session_open(principal=fresh)
    assert opened.project_source == "default_created" and opened.session.project.name == "Default"


def test_inject_at_open_records_applications(tenant_a: Tenant, tenant_b: Tenant) -> None:
    validator_id, _ = _teach_rules(tenant_a)
    opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert opened.relevant_knowledge is not None
    assert opened.relevant_knowledge.ids[0] == validator_id
    assert "field_validator" in opened.relevant_knowledge.text
    roles = SessionKnowledgeApplication.objects.filter(session=opened.session).values_list("role", flat=True)
    assert set(roles) == {ApplicationRole.INJECTED}
    assert opened.session.events.filter(event_type="prompt").count() == 1
    # The second tenant sees nothing of the first, neither injected nor in its own sessions.
    other = session_open(principal=tenant_b.principal, prompt=PROMPT)
    assert other.relevant_knowledge is None
    assert not session_open(principal=tenant_a.principal).relevant_knowledge  # no prompt, no retrieval


@override_settings(BRAIN_EMBEDDINGS_PROVIDER="openai", BRAIN_EMBEDDINGS_BASE_URL="http://127.0.0.1:9/v1",
                   BRAIN_EMBEDDINGS_MODEL="x", BRAIN_EMBEDDINGS_TIMEOUT_S=1.0)
def test_embedder_down_falls_back_to_text_search(tenant_a: Tenant) -> None:
    _teach_rules(tenant_a)
    opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert Session.objects.filter(id=opened.session.id).exists()
    assert opened.relevant_knowledge is not None and "field_validator" in opened.relevant_knowledge.text


def test_retrieval_failure_is_logged_and_omitted(tenant_a: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    _teach_rules(tenant_a)
    from django.conf import settings

    broken = {**settings.BRAIN_RETRIEVAL, "candidates": -1}  # PostgreSQL refuses a negative LIMIT
    with override_settings(BRAIN_RETRIEVAL=broken), caplog.at_level(logging.WARNING):
        opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert opened.relevant_knowledge is None
    assert Session.objects.filter(id=opened.session.id).exists()
    assert "op=start.inject_failed" in caplog.text
    assert not SessionKnowledgeApplication.objects.filter(session=opened.session).exists()


def test_open_action_items_for_caller(tenant_a: Tenant, tenant_b: Tenant) -> None:
    def item(text: str, *tags: str) -> str:
        return str(knowledge_teach(principal=tenant_a.principal, type="action_item", rule=text,
                                   project_id=str(tenant_a.project.id), tags=["action-item", *tags]).item.id)

    first = item("write the migration plan", "for:alice@a.example")
    blocker = item("unblock the CI runner", "for:alice@a.example", "blocker")
    item("someone else's task", "for:carol@a.example")
    held, replaced = item("held for review", "for:alice@a.example"), item("replaced", "for:alice@a.example")
    KnowledgeItem.objects.filter(id=held).update(review_status=ReviewStatus.PENDING)
    KnowledgeItem.objects.filter(id=replaced).update(superseded_by_id=first)
    opened = session_open(principal=tenant_a.principal, prompt=PROMPT)
    assert opened.open_action_items is not None
    assert opened.open_action_items.ids == [blocker, first]
    text = opened.open_action_items.text
    assert "unblock the CI runner" in text and "held for review" not in text and "replaced" not in text
    assert not SessionKnowledgeApplication.objects.filter(session=opened.session).exists()
    assert session_open(principal=tenant_b.principal).open_action_items is None
