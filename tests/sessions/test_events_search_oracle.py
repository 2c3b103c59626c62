"""Event logging, mid-task retrieval, session search, recent sessions and the oracle, with a second tenant."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from brain.errors import ForbiddenProject, NotFound, ValidationFailed
from knowledge.services.teach import knowledge_teach
from sessions.models import ApplicationRole, SessionKnowledgeApplication
from sessions.selectors.oracle import oracle_ask
from sessions.selectors.owned import sessions_recent
from sessions.selectors.search import sessions_find
from sessions.services.events import MAX_PAYLOAD_BYTES, session_event_record
from sessions.services.open import session_open
from sessions.services.outcome import OutcomeReport, session_report_outcome
from sessions.services.retrieve import knowledge_retrieve
from tests.conftest import Tenant
from tests.support.fake_llm import FakeLlm, fake_llm_server

pytestmark = pytest.mark.django_db


def test_log_event_rules(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = session_open(principal=tenant_a.principal, prompt="fix the flaky login test").session
    event = session_event_record(principal=tenant_a.principal, session_id=str(session.id),
                                 event_type="user_correction", payload={"message": "use freezegun, not sleep"})
    assert event.content == "use freezegun, not sleep"
    with pytest.raises(ValidationFailed):
        session_event_record(principal=tenant_a.principal, session_id=str(session.id), event_type="dance")
    with pytest.raises(ValidationFailed):
        session_event_record(principal=tenant_a.principal, session_id=str(session.id), event_type="note",
                             payload={"text": "x" * MAX_PAYLOAD_BYTES})
    for principal, sid in ((tenant_b.principal, str(session.id)), (tenant_a.principal, str(uuid.uuid4()))):
        with pytest.raises(NotFound):
            session_event_record(principal=principal, session_id=sid, event_type="note")
    session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                           report=OutcomeReport(success=True))
    with pytest.raises(ValidationFailed):
        session_event_record(principal=tenant_a.principal, session_id=str(session.id), event_type="note")
    assert session.events.count() == 2  # the prompt and the correction, nothing from refused calls


def test_retrieve_records_injected_on_session(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rule = knowledge_teach(principal=tenant_a.principal, type="reflex", trigger="writing SQL migrations",
                           rule="always add indexes concurrently").item
    session = session_open(principal=tenant_a.principal).session
    out = knowledge_retrieve(principal=tenant_a.principal, prompt="write a SQL migration adding an index",
                             session_id=str(session.id), budget_tokens=400)
    assert out.found.hits[0].id == rule.id and "relevance" in out.found.hits[0].explain
    assert out.injection.ids == [str(rule.id)] and "indexes concurrently" in out.injection.text
    assert SessionKnowledgeApplication.objects.filter(session=session, role=ApplicationRole.INJECTED).count() == 1
    tiny = knowledge_retrieve(principal=tenant_a.principal, prompt="SQL migration index", budget_tokens=20)
    assert tiny.injection.ids == [] and tiny.injection.text == ""
    assert knowledge_retrieve(principal=tenant_b.principal, prompt="SQL migration index").found.hits == []
    with pytest.raises(NotFound):
        knowledge_retrieve(principal=tenant_b.principal, prompt="SQL", session_id=str(session.id))
    with pytest.raises(ForbiddenProject):
        knowledge_retrieve(principal=tenant_b.principal, prompt="SQL", project_id=str(tenant_a.project.id))
    with pytest.raises(ValidationFailed):
        knowledge_retrieve(principal=tenant_a.principal, prompt=" ")


def test_retrieve_on_a_closed_session_searches_its_project_and_records_nothing(tenant_a: Tenant,
                                                                               tenant_b: Tenant) -> None:
    rule = knowledge_teach(principal=tenant_a.principal, type="reflex", trigger="writing SQL migrations",
                           rule="always add indexes concurrently").item
    session = session_open(principal=tenant_a.principal).session
    session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                           report=OutcomeReport(success=True))
    out = knowledge_retrieve(principal=tenant_a.principal, prompt="write a SQL migration adding an index",
                             session_id=str(session.id))
    assert out.injection.ids == [str(rule.id)]  # the search still runs in the session's project
    assert not SessionKnowledgeApplication.objects.filter(session=session).exists()  # its credit has run
    with pytest.raises(NotFound):
        knowledge_retrieve(principal=tenant_b.principal, prompt="SQL", session_id=str(session.id))


def test_session_search_and_recent(tenant_a: Tenant, tenant_b: Tenant) -> None:
    s1 = session_open(principal=tenant_a.principal, prompt="migrate the billing service to stripe webhooks").session
    session_event_record(principal=tenant_a.principal, session_id=str(s1.id), event_type="note",
                         payload={"text": "webhook signature verification needs the raw body"})
    session_open(principal=tenant_a.principal, prompt="rename css classes in the navbar")
    found = sessions_find(principal=tenant_a.principal, query="stripe webhook signature")
    assert found.sessions[0].session.id == s1.id and found.sessions[0].events
    assert sessions_find(principal=tenant_b.principal, query="stripe webhook signature").sessions == []
    future = timezone.now() + timedelta(days=1)
    assert sessions_find(principal=tenant_a.principal, query="stripe webhook", since=future).sessions == []
    with pytest.raises(ValidationFailed):
        sessions_find(principal=tenant_a.principal, query="x", since=future, until=future - timedelta(days=2))
    recent = sessions_recent(principal=tenant_a.principal)
    assert [r.prompt_preview for r in recent][1] == s1.prompt
    assert sessions_recent(principal=tenant_b.principal) == []


def test_oracle_extractive_with_citations(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rule = knowledge_teach(principal=tenant_a.principal, trigger="retrying HTTP calls",
                           rule="use tenacity with exponential backoff and jitter").item
    session_open(principal=tenant_a.principal, prompt="add retries with backoff to the HTTP client")
    answer = oracle_ask(principal=tenant_a.principal, question="how did I add retries with backoff to HTTP calls?")
    assert answer.mode == "extractive" and answer.groundedness in ("high", "medium")
    kinds = {(c.kind, c.id) for c in answer.citations}
    assert ("knowledge", rule.id) in kinds and any(k == "session" for k, _ in kinds)
    assert "tenacity" in answer.answer
    empty = oracle_ask(principal=tenant_b.principal, question="how did I add retries with backoff to HTTP calls?")
    assert empty.citations == [] and empty.groundedness == "none"
    with pytest.raises(ValidationFailed):
        oracle_ask(principal=tenant_a.principal, question="?")


def test_oracle_model_answer_restricted_to_citations(tenant_a: Tenant) -> None:
    knowledge_teach(principal=tenant_a.principal, trigger="retrying HTTP calls", rule="use tenacity backoff")
    base = {**settings.BRAIN_LLM, "model": "gpt-4o-mini", "openai_api_key": "k", "timeout_s": 2.0,
            "max_attempts": 1, "backoff_s": 0.0}
    with fake_llm_server(FakeLlm(reply="You used tenacity [1].")) as fake, \
            override_settings(BRAIN_LLM={**base, "openai_base_url": f"{fake.url}/v1"}):
        answer = oracle_ask(principal=tenant_a.principal, question="how do I retry HTTP calls?")
    assert answer == dataclasses.replace(answer, mode="model", answer="You used tenacity [1].")
    sent = fake.requests[0]["body"]["messages"]
    assert "ONLY the numbered sources" in sent[0]["content"]
    assert "[1] <<source n=1 from=knowledge>> When retrying HTTP calls" in sent[1]["content"]
    with override_settings(BRAIN_LLM={**base, "openai_base_url": "http://127.0.0.1:9/v1"}):
        fallback = oracle_ask(principal=tenant_a.principal, question="how do I retry HTTP calls?")
    assert fallback.mode == "extractive" and "tenacity" in fallback.answer
