"""A session, its prompt event and the rows that reference it are one INSERT statement: all stored, or none."""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from sessions.models import ApplicationRole, Session, SessionEvent, SessionKnowledgeApplication
from sessions.services.events import session_draft, session_insert, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as served: a BEGIN or COMMIT would be counted


def test_a_session_and_its_prompt_event_are_one_statement(tenant_a: Tenant, tenant_b: Tenant) -> None:
    with CaptureQueriesContext(connection) as queries:
        session = session_start(user=tenant_a.user, project=tenant_a.project, client_type="cli",
                                prompt="rotate the signing keys", defer_vectors=True)
    assert len(queries.captured_queries) == 1, [q["sql"][:80] for q in queries.captured_queries]
    stored = Session.objects.get(pk=session.pk)
    assert (stored.user_id, stored.project_id, stored.client_type) == (tenant_a.user.pk, tenant_a.project.pk, "cli")
    event = SessionEvent.objects.get(session=stored)
    assert (event.event_type, event.content, event.user_id, event.project_id) == (
        "prompt", "rotate the signing keys", tenant_a.user.pk, tenant_a.project.pk)
    assert event.occurred_at == stored.started_at
    # The generated full-text column is PostgreSQL's, filled on this insert too.
    assert SessionEvent.objects.filter(pk=event.pk, search_tokens__gt=0).exists()
    assert not Session.objects.filter(user=tenant_b.user).exists()
    assert not SessionEvent.objects.filter(project=tenant_b.project).exists()


def test_a_row_that_fails_leaves_nothing_of_the_statement(tenant_a: Tenant) -> None:
    draft = session_draft(user=tenant_a.user, project=tenant_a.project, prompt="ship it", defer_vectors=True)
    missing = SessionKnowledgeApplication(session=draft.session, knowledge_id=uuid.uuid4(),
                                          role=ApplicationRole.INJECTED)
    with pytest.raises(IntegrityError):
        session_insert(draft, with_rows=[missing])  # no such knowledge row: the foreign key refuses it
    assert not Session.objects.filter(pk=draft.session.pk).exists()
    assert not SessionEvent.objects.filter(session_id=draft.session.pk).exists()


def test_a_session_without_a_prompt_is_one_row(tenant_a: Tenant) -> None:
    session = session_start(user=tenant_a.user, project=tenant_a.project)
    assert Session.objects.filter(pk=session.pk).exists()
    assert not SessionEvent.objects.filter(session=session).exists()
