"""The statements each hot-path tool call costs, counted in-process (autocommit, as served): brain_log_event in
two (the call's own UPDATE ... RETURNING, then one prepared INSERT ... SELECT that checks the session), and the session
open and close at their reworked counts. Refusals keep their precise errors and store nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from brain.broker import sends_flush
from knowledge.services.knowledge_vectors import KNOWLEDGE_BATCHER
from sessions.models import Session, SessionEvent, SessionJob
from sessions.services.event_vectors import EVENT_BATCHER
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, call_tool, error_of

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as in production: BEGIN/COMMIT are counted
PROMPT = "fix the flaky pytest fixture that leaks database connections"
# After the commit the close's two jobs are sent and stamped sent by the process's sender thread, not the request.
SENT_STAMP = 'UPDATE "agent_sessions_sessionjob" SET "enqueued_at"'


def _statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries]


def _settle() -> None:
    assert EVENT_BATCHER.flush(timeout=60) and KNOWLEDGE_BATCHER.flush(timeout=60)


@pytest.fixture
def taught(client: Client, tenant_a: Tenant) -> tuple[Mcp, str]:
    mcp = Mcp(client, tenant_a.user_raw)
    session = mcp.initialize()
    for rule in ("Close database connections in pytest fixtures with yield and a finally block",
                 "Mark flaky pytest tests with a ticket number instead of retrying them"):
        call_tool(mcp, "brain_teach_knowledge", {"rule": rule}, session=session)
    warm = call_tool(mcp, "brain_start_session", {"clientType": "warm", "prompt": PROMPT}, session=session)
    # Warm caches and each connection's prepared statements (the first use of one costs its PREPARE).
    used = (warm["structuredContent"].get("relevantKnowledge") or {}).get("knowledgeIds", [])
    call_tool(mcp, "brain_log_event", {"sessionId": warm["structuredContent"]["sessionId"], "eventType": "note",
                                       "payload": {"text": "warming the event insert"}}, session=session)
    call_tool(mcp, "brain_report_session_outcome", {"sessionId": warm["structuredContent"]["sessionId"],
                                                    "success": True, "knowledgeUsed": used}, session=session)
    _settle()
    return mcp, session


def _call(mcp: Mcp, session: str, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    with CaptureQueriesContext(connection) as queries:
        result = call_tool(mcp, name, args, session=session)
    assert not result.get("isError"), result
    statements = _statements(queries)
    _settle()
    return result["structuredContent"], statements


def test_log_event_costs_two_statements(taught: tuple[Mcp, str], tenant_a: Tenant) -> None:
    mcp, session = taught
    sid = call_tool(mcp, "brain_start_session", {"clientType": "t"}, session=session)["structuredContent"]["sessionId"]
    out, statements = _call(mcp, session, "brain_log_event",
                            {"sessionId": sid, "eventType": "note", "payload": {"text": "retry loop rewritten"}})
    assert len(statements) == 2, [s[:80] for s in statements]
    assert statements[1].startswith("EXECUTE brain_event_insert_owned(")  # prepared on the connection's first event
    event = SessionEvent.objects.get(pk=out["id"])
    assert (event.session_id, event.user_id, event.project_id) == (
        Session.objects.get(pk=sid).pk, tenant_a.user.pk, tenant_a.project.pk)
    assert event.content == "retry loop rewritten" and event.embedding is not None  # the batcher ran


def test_log_event_refusals_keep_their_errors_and_store_nothing(taught: tuple[Mcp, str], client: Client,
                                                                tenant_b: Tenant) -> None:
    mcp, session = taught
    other = Mcp(client, tenant_b.user_raw)
    theirs = call_tool(other, "brain_start_session", {"clientType": "b"})["structuredContent"]["sessionId"]
    before = SessionEvent.objects.count()
    args = {"eventType": "note", "payload": {"text": "x"}}
    assert error_of(call_tool(mcp, "brain_log_event", {"sessionId": theirs, **args}, session=session))[
        "code"] == "NOT_FOUND"
    assert error_of(call_tool(mcp, "brain_log_event", {"sessionId": "not-a-uuid", **args}, session=session))[
        "code"] == "NOT_FOUND"
    mine = call_tool(mcp, "brain_start_session", {"clientType": "t"}, session=session)["structuredContent"]["sessionId"]
    call_tool(mcp, "brain_report_session_outcome", {"sessionId": mine, "success": True}, session=session)
    closed = error_of(call_tool(mcp, "brain_log_event", {"sessionId": mine, **args}, session=session))
    assert "already closed" in closed["message"]
    assert SessionEvent.objects.count() == before  # no prompt, no learnings: every refused event is absent
    assert not SessionEvent.objects.filter(session_id=theirs).exists()


def test_log_event_from_a_project_token_reaches_only_its_project(taught: tuple[Mcp, str], client: Client,
                                                                  tenant_a: Tenant, tenant_b: Tenant) -> None:
    mcp, session = taught
    elsewhere = call_tool(mcp, "brain_start_session", {"clientType": "t", "projectName": "Side Project"},
                          session=session)["structuredContent"]["sessionId"]
    scoped = Mcp(client, tenant_a.project_raw)
    scoped_session = scoped.initialize()
    args = {"eventType": "note", "payload": {"text": "from the ci token"}}
    refused = call_tool(scoped, "brain_log_event", {"sessionId": elsewhere, **args}, session=scoped_session)
    assert error_of(refused)["code"] == "NOT_FOUND"
    own = call_tool(scoped, "brain_start_session", {"clientType": "ci"}, session=scoped_session)["structuredContent"]
    logged = call_tool(scoped, "brain_log_event", {"sessionId": own["sessionId"], **args}, session=scoped_session)
    assert not logged.get("isError"), logged
    assert list(SessionEvent.objects.filter(content="from the ci token").values_list("project_id", flat=True)) == [
        tenant_a.project.pk]
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_start_session_with_a_prompt_and_its_close_at_their_counts(taught: tuple[Mcp, str], tenant_a: Tenant) -> None:
    mcp, session = taught
    started, opened = _call(mcp, session, "brain_start_session", {"clientType": "t", "prompt": PROMPT})
    injected = (started.get("relevantKnowledge") or {}).get("knowledgeIds", [])
    assert injected, started  # the counts below are those of an open that injects
    # On the request's connection: auth+count with the first visible project (the one the open lands in), search
    # (the scope's size with the query's lexemes, the full-text list, the fusion; no transaction of its own; the
    # project resolved above is not read again), then the record of what was injected (one INSERT prepared per
    # connection): 5. The session and its prompt event are stored, and the action items read, by a store thread on
    # its own connection while the search runs (19 before issue 17's second pass; three commits that wait for the
    # disk until its fourth; a BEGIN, three INSERTs and a COMMIT until its eighth; the search's BEGIN and COMMIT until
    # its fourteenth; the project read apart until its thirty-sixth; the session stored after the search, in one
    # statement with the injected rows, until its fortieth).
    assert len(opened) == 5, [s[:80] for s in opened]
    assert "brain_tool_call_first" in opened[0]
    assert "fused" in opened[-2] and opened[-1].startswith("EXECUTE brain_applications_record(")
    assert not any('INSERT INTO "agent_sessions_session"' in statement for statement in opened)
    stored = Session.objects.get(pk=started["sessionId"])
    assert (stored.user_id, stored.project_id, stored.prompt) == (tenant_a.user.pk, tenant_a.project.pk, PROMPT)
    prompt_event = SessionEvent.objects.get(session=stored, event_type="prompt")
    assert prompt_event.content == PROMPT and prompt_event.embedding is not None  # the search's vector, memoised
    assert sorted(str(k) for k in stored.applications.filter(role="injected").values_list("knowledge_id", flat=True)
                  ) == sorted(injected)
    learning = {"trigger": "pytest fixtures", "rule": "yield the connection and close it in finally",
                "rationale": "it leaked", "type": "heuristic"}
    _, closed = _call(mcp, session, "brain_report_session_outcome", {
        "sessionId": started["sessionId"], "success": True, "userFeedback": "up", "filesModified": 1,
        "knowledgeUsed": injected, "learnings": [learning]})
    # auth+count, BEGIN, session lock, events, injected, owned (the last three prepared per connection), the credit
    # (reported rows recorded with the outcome, the outcome on the session's other applications, the rows locked in
    # id order and updated, their stages returned: one statement), learning INSERT, jobs INSERT (returning the rows),
    # session UPDATE, COMMIT: 11 (32 before issue 17, 16 before the credit and the jobs became one statement each,
    # 13 before the reported rows and the outcome joined the credit).
    assert len(closed) == 11, [s[:80] for s in closed]
    credit = next(s for s in closed if 'UPDATE "knowledge_knowledgeitem"' in s)
    assert 'INSERT INTO "agent_sessions_sessionknowledgeapplication"' in credit and "SET outcome" in credit
    assert not any(SENT_STAMP in s for s in closed)  # the broker's round trips are not the close's
    assert sends_flush() and SessionJob.objects.filter(session_id=started["sessionId"], enqueued_at__isnull=False
                                                       ).count() == 2
    assert sum('UPDATE "knowledge_knowledgeitem"' in s for s in closed) == 1
    assert SessionJob.objects.filter(session_id=started["sessionId"]).count() == 2
    assert SessionEvent.objects.filter(session_id=started["sessionId"], event_type="learning_captured").count() == 1
