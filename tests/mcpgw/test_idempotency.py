"""Idempotency keys: clientRequestId on the creating tools, Idempotency-Key on REST POSTs. A retry with the
same key answers the first result and stores nothing new; another tenant's identical key is its own."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from knowledge.models import KnowledgeItem
from mcpgw.idempotent import once
from mcpgw.schemas_brain import LogEventIn, LogEventOut
from projects.models import ApiToken, IdempotencyKey
from projects.tasks import purge_expired
from sessions.models import Session as AgentSession
from sessions.models import SessionEvent
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, call_tool, error_of
from tests.support.api import api_error, bearer

KEY = "7d0c5a52-retry-1"


def ok(mcp: Mcp, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = call_tool(mcp, name, args)
    assert not result.get("isError"), result
    data: dict[str, Any] = result["structuredContent"]
    return data


@pytest.mark.django_db
def test_each_creating_tool_replays_its_first_result(mcp_a: Mcp, mcp_b: Mcp, tenant_a: Tenant) -> None:
    first = ok(mcp_a, "brain_start_session", {"prompt": "fix the login", "clientRequestId": KEY})
    assert ok(mcp_a, "brain_start_session", {"prompt": "fix the login", "clientRequestId": KEY}) == first
    assert AgentSession.objects.filter(user=tenant_a.user).count() == 1
    sid = first["sessionId"]
    event = {"sessionId": sid, "eventType": "note", "payload": {"text": "hi"}, "clientRequestId": KEY}
    logged = ok(mcp_a, "brain_log_event", event)
    assert ok(mcp_a, "brain_log_event", event) == logged
    assert SessionEvent.objects.filter(session_id=sid, event_type="note").count() == 1
    teach = {"rule": "retry with the same key", "clientRequestId": KEY}
    taught = ok(mcp_a, "brain_teach_knowledge", teach)
    assert ok(mcp_a, "brain_teach_knowledge", teach) == taught
    assert KnowledgeItem.objects.filter(content="retry with the same key").count() == 1
    # the second tenant's identical key is its own (the same rule taught again by its owner is reinforced,
    # not duplicated, so the count shows only what the key let through)
    theirs = ok(mcp_b, "brain_teach_knowledge", teach)
    assert theirs["id"] != taught["id"]
    assert KnowledgeItem.objects.filter(content="retry with the same key").count() == 2


@pytest.mark.django_db
def test_a_key_reused_for_other_arguments_is_refused_and_a_refusal_is_not_remembered(mcp_a: Mcp) -> None:
    ok(mcp_a, "brain_teach_knowledge", {"rule": "first rule", "clientRequestId": KEY})
    clash = call_tool(mcp_a, "brain_teach_knowledge", {"rule": "second rule", "clientRequestId": KEY})
    assert error_of(clash)["code"] == "CONFLICT" and "new key" in error_of(clash)["message"]
    assert not KnowledgeItem.objects.filter(content="second rule").exists()
    missing = {"sessionId": str(uuid.uuid4()), "eventType": "note", "clientRequestId": "k2"}
    assert error_of(call_tool(mcp_a, "brain_log_event", missing))["code"] == "NOT_FOUND"
    assert not IdempotencyKey.objects.filter(key="k2").exists()
    bad = call_tool(mcp_a, "brain_teach_knowledge", {"rule": "a rule", "clientRequestId": "has space"})
    assert error_of(bad)["code"] == "VALIDATION"


@pytest.mark.django_db
def test_keys_are_per_token_and_expire(mcp_a: Mcp, tenant_a: Tenant, client: Client) -> None:
    ok(mcp_a, "brain_teach_knowledge", {"rule": "user tokens keep their keys", "clientRequestId": KEY})
    # the same key from the project token is that token's own: other arguments are no conflict
    ok(Mcp(client, tenant_a.project_raw), "brain_teach_knowledge",
       {"rule": "scoped tokens get their own keys", "clientRequestId": KEY})
    assert KnowledgeItem.objects.filter(content="scoped tokens get their own keys").count() == 1
    IdempotencyKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    # an expired key is a new key: other arguments under it are written, not refused
    ok(mcp_a, "brain_teach_knowledge", {"rule": "an expired key is a new key", "clientRequestId": KEY})
    assert KnowledgeItem.objects.filter(content="an expired key is a new key").count() == 1
    IdempotencyKey.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert purge_expired() == 2 and not IdempotencyKey.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_write_once(tenant_a: Tenant) -> None:
    """Two retries racing with one key: the second waits on the first's row, then replays its answer."""
    sid = ok(Mcp(Client(), tenant_a.user_raw), "brain_start_session", {})["sessionId"]
    args = LogEventIn.model_validate({"sessionId": sid, "eventType": "note", "clientRequestId": KEY})
    inside, release = threading.Event(), threading.Event()
    answers: list[LogEventOut] = []

    def slow_write() -> LogEventOut:
        from sessions.services.events import session_event_record
        event = session_event_record(principal=tenant_a.principal, session_id=sid, event_type="note", payload={})
        inside.set()
        release.wait(10)  # hold the transaction open while the racer arrives
        return LogEventOut.model_validate({"id": str(event.id), "accepted": True})

    def racer(run: Any) -> None:
        try:
            answers.append(once(tenant_a.principal, "brain_log_event", args, LogEventOut, run))
        finally:
            connection.close()

    first = threading.Thread(target=racer, args=(slow_write,))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=racer, args=(lambda: pytest.fail("the racer must not write"),))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # blocked on the first transaction's key row
    release.set()
    first.join(10)
    second.join(10)
    assert len(answers) == 2 and answers[0] == answers[1]
    assert SessionEvent.objects.filter(session_id=sid, event_type="note").count() == 1


@pytest.mark.django_db
def test_rest_posts_take_an_idempotency_key(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    body = {"rule": "rest retries are safe"}
    headers = {"Idempotency-Key": KEY}
    first = client.post("/api/v1/knowledge", body, content_type="application/json", headers=headers)
    again = client.post("/api/v1/knowledge", body, content_type="application/json", headers=headers)
    assert first.status_code == again.status_code == 201 and again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true" and not first.has_header("Idempotent-Replayed")
    other = bearer(tenant_b.user_raw).post("/api/v1/knowledge", body, content_type="application/json",
                                           headers=headers)
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert KnowledgeItem.objects.filter(content=body["rule"]).count() == 2
    clash = client.post("/api/v1/knowledge", {"rule": "another"}, content_type="application/json", headers=headers)
    api_error(clash, 409, "CONFLICT")
    refused = client.post("/api/v1/knowledge", {"rule": ""}, content_type="application/json",
                          headers={"Idempotency-Key": "k3"})
    assert refused.status_code == 400 and not IdempotencyKey.objects.filter(key="k3").exists()
    api_error(client.post("/api/v1/knowledge", body, content_type="application/json",
                          headers={"Idempotency-Key": "x" * 201}), 400, "VALIDATION")
    api_error(Client().post("/api/v1/knowledge", body, content_type="application/json", headers=headers),
              401, "UNAUTHENTICATED")


@pytest.mark.django_db
def test_a_replayed_token_mint_never_shows_the_secret_again(tenant_a: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    headers = {"Idempotency-Key": KEY}
    minted = client.post("/api/v1/tokens", {"label": "ci-x"}, content_type="application/json", headers=headers)
    assert minted.status_code == 201 and minted.json()["token"]
    again = api_error(client.post("/api/v1/tokens", {"label": "ci-x"}, content_type="application/json",
                                  headers=headers), 409, "CONFLICT")
    assert again["details"]["tokenId"] == minted.json()["id"]
    assert ApiToken.objects.filter(user=tenant_a.user, label="ci-x").count() == 1
    stored = IdempotencyKey.objects.get(key=KEY)
    assert minted.json()["token"] not in str(stored.body)
