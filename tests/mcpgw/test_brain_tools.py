"""Each brain tool over /mcp: happy path, its error codes, the second tenant and the project-token matrix."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from knowledge.models import KnowledgeItem
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.services.peer import peer_card_set
from sessions.models import Session
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, call_tool, error_of

pytestmark = pytest.mark.django_db
MISSING = str(uuid.uuid4())


def code(result: dict[str, Any]) -> str | None:
    return error_of(result)["code"] if result.get("isError") else None


def ok(mcp: Mcp, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = call_tool(mcp, name, args)
    assert not result.get("isError"), result
    data: dict[str, Any] = result["structuredContent"]
    return data


@pytest.fixture
def mcp_scoped(tenant_a: Tenant, client: Client) -> Mcp:
    return Mcp(client, tenant_a.project_raw)


def test_validation_errors_change_nothing(mcp_a: Mcp) -> None:
    bad = {
        "brain_start_session": {"projectName": ""},
        "brain_retrieve_knowledge": {"prompt": ""},
        "brain_report_session_outcome": {"sessionId": MISSING},  # success is required
        "brain_teach_knowledge": {"rule": "keep it", "type": "spell"},
        "brain_get_user_style": {"unexpected": 1},
        "brain_ask_oracle": {"question": "?"},
        "brain_log_event": {"sessionId": MISSING, "eventType": ""},
        "brain_find_skill": {"query": "x", "limit": 0},
        "brain_session_search": {"query": "x", "since": "last tuesday"},
    }
    for name, args in bad.items():
        assert code(call_tool(mcp_a, name, args)) == "VALIDATION", name
    sid = ok(mcp_a, "brain_start_session", {})["sessionId"]
    assert code(call_tool(mcp_a, "brain_log_event", {"sessionId": sid, "eventType": "dance"})) == "VALIDATION"
    assert ok(mcp_a, "brain_session_search", {"query": "dance"})["sessions"] == []


def test_a_list_item_over_its_cap_is_refused_and_changes_nothing(mcp_a: Mcp, mcp_b: Mcp, tenant_a: Tenant) -> None:
    sid = ok(mcp_a, "brain_start_session", {})["sessionId"]
    rows_before = KnowledgeItem.objects.filter(owner=tenant_a.user).count()
    too_long = (
        ("brain_report_session_outcome", {"sessionId": sid, "success": False, "errors": ["ok", "e" * 4001]},
         "errors.1"),
        ("brain_report_session_outcome", {"sessionId": sid, "success": True, "knowledgeUsed": ["k" * 65]},
         "knowledgeUsed.0"),
        ("brain_report_session_outcome", {"sessionId": sid, "success": True, "resolvedActionItemIds": ["r" * 65]},
         "resolvedActionItemIds.0"),
        ("brain_teach_knowledge", {"rule": "pin node to 20 in CI", "tags": ["ci", "t" * 121]}, "tags.1"),
    )
    for name, args, where in too_long:
        result = call_tool(mcp_a, name, args)
        assert code(result) == "VALIDATION" and where in error_of(result)["message"], (name, result)
    assert Session.objects.get(pk=sid).ended_at is None
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == rows_before
    # Items at their caps pass; the other tenant still cannot see the session.
    assert code(call_tool(mcp_b, "brain_report_session_outcome", {"sessionId": sid, "success": True})) == "NOT_FOUND"
    ok(mcp_a, "brain_report_session_outcome", {"sessionId": sid, "success": False, "errors": ["e" * 4000]})
    assert Session.objects.get(pk=sid).outcome["report"]["errors"] == ["e" * 4000]
    ok(mcp_a, "brain_teach_knowledge", {"rule": "pin node to 20 in CI", "tags": ["t" * 120]})


def test_session_tools_matrix(mcp_a: Mcp, mcp_b: Mcp, mcp_scoped: Mcp, tenant_a: Tenant, tenant_b: Tenant) -> None:
    started = ok(mcp_a, "brain_start_session", {"prompt": "wire stripe webhooks", "projectName": "Billing"})
    sid = started["sessionId"]
    assert started["projectSource"] == "project_name" and "relevantKnowledge" not in started
    for name, args in (("brain_log_event", {"sessionId": sid, "eventType": "note"}),
                       ("brain_report_session_outcome", {"sessionId": sid, "success": True}),
                       ("brain_retrieve_knowledge", {"prompt": "x", "context": {"sessionId": sid}})):
        assert code(call_tool(mcp_b, name, args)) == "NOT_FOUND", name
        assert code(call_tool(mcp_scoped, name, args)) == "NOT_FOUND", name  # session outside the token's project
        missing = {**args, "sessionId": MISSING} if "sessionId" in args else {**args, "context": {"sessionId": MISSING}}
        assert code(call_tool(mcp_a, name, missing)) == "NOT_FOUND", name
    for mcp, pid in ((mcp_b, tenant_a.project.id), (mcp_scoped, started["projectId"]), (mcp_a, MISSING)):
        assert code(call_tool(mcp, "brain_start_session", {"projectId": str(pid)})) == "FORBIDDEN_PROJECT"
        assert code(call_tool(mcp, "brain_teach_knowledge", {"rule": "a rule", "projectId": str(pid)})) \
            == "FORBIDDEN_PROJECT"
        assert code(call_tool(mcp, "brain_retrieve_knowledge", {"prompt": "x", "context": {"projectId": str(pid)}})) \
            == "FORBIDDEN_PROJECT"
    scoped = ok(mcp_scoped, "brain_start_session", {"projectName": "Ignored"})
    assert (scoped["projectId"], scoped["projectSource"]) == (str(tenant_a.project.id), "token_scope")
    assert ok(mcp_a, "brain_log_event", {"sessionId": sid, "eventType": "note", "payload": {"text": "hi"}})["accepted"]
    closed = ok(mcp_a, "brain_report_session_outcome", {"sessionId": sid, "success": False, "userFeedback": "down"})
    assert closed["hint"].startswith("This session went wrong") and closed["queued"] is True
    assert ok(mcp_a, "brain_report_session_outcome", {"sessionId": sid, "success": True})["alreadyClosed"] is True
    assert ok(mcp_b, "brain_session_search", {"query": "stripe webhooks"})["sessions"] == []
    assert ok(mcp_a, "brain_session_search", {"query": "stripe webhooks"})["sessions"][0]["sessionId"] == sid


def test_knowledge_tools_matrix(mcp_a: Mcp, mcp_b: Mcp, mcp_scoped: Mcp, tenant_a: Tenant) -> None:
    # taught before any session is open, a rule without projectId lands in the default project
    main = ok(mcp_a, "brain_teach_knowledge", {"rule": "always type-hint public functions", "type": "reflex",
                                               "trigger": "writing python"})
    assert main["confidence"] == 1.0 and main["projectId"] == str(tenant_a.project.id)
    other_project = ok(mcp_a, "brain_start_session", {"projectName": "Side"})["projectId"]
    side = ok(mcp_a, "brain_teach_knowledge", {"rule": "side projects use sqlite", "type": "reflex",
                                               "projectId": other_project})
    newer = ok(mcp_a, "brain_teach_knowledge", {"rule": "type-hint everything, private too", "type": "reflex",
                                                "supersedesKnowledgeId": main["id"],
                                                "projectId": str(tenant_a.project.id)})
    assert newer["supersededId"] == main["id"]
    assert ok(mcp_b, "brain_teach_knowledge", {"rule": "bob's rule", "supersedesKnowledgeId": newer["id"]}) \
        .get("supersededId") is None
    style = ok(mcp_a, "brain_get_user_style", {})
    assert {r["id"] for r in style["reflexes"]} == {newer["id"], side["id"]}
    assert {r["id"] for r in ok(mcp_scoped, "brain_get_user_style", {})["reflexes"]} == {newer["id"]}
    assert ok(mcp_b, "brain_get_user_style", {})["reflexes"] == []
    retrieved = ok(mcp_a, "brain_retrieve_knowledge", {"prompt": "type hints in python functions", "budgetTokens": 300})
    assert retrieved["bundle"]["items"][0]["id"] == newer["id"]
    assert f"id={newer['id'].replace('-', '')[:8]}>>" in retrieved["injection"]  # the short id of the injection
    assert ok(mcp_b, "brain_retrieve_knowledge", {"prompt": "type hints in python"})["bundle"]["items"] == []
    oracle = ok(mcp_a, "brain_ask_oracle", {"question": "how do I handle type hints?"})
    assert oracle["mode"] == "extractive" and oracle["citations"][0]["id"] == newer["id"]
    assert ok(mcp_b, "brain_ask_oracle", {"question": "how do I handle type hints?"})["groundedness"] == "none"
    assert code(call_tool(mcp_scoped, "brain_ask_oracle", {"question": "type hints?", "projectId": other_project})) \
        == "FORBIDDEN_PROJECT"


def test_find_skill(mcp_a: Mcp, mcp_b: Mcp, tenant_a: Tenant) -> None:
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content="1. bump version 2. build 3. twine upload", type="skill", stage="wisdom",
                       trigger="releasing a python package"),
        KnowledgeDraft(content="half-baked release notes", type="skill", stage="notes",
                       trigger="releasing a python package"),
    ])
    skills = ok(mcp_a, "brain_find_skill", {"query": "release my python package", "limit": 3})["skills"]
    assert [s["stage"] for s in skills] == ["wisdom"]
    assert ok(mcp_b, "brain_find_skill", {"query": "release my python package"})["skills"] == []


def read_resource(mcp: Mcp, uri: str) -> Any:
    response = mcp.modern("resources/read", {"uri": uri})
    assert response.status_code == 200, response.content
    return json.loads(response.json()["result"]["contents"][0]["text"])


def test_user_resources_keep_their_documents(mcp_a: Mcp, mcp_b: Mcp, tenant_a: Tenant) -> None:
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content="1. bump version 2. build 3. twine upload", type="skill", stage="wisdom",
                       trigger="releasing a python package", confidence=0.9, tags=["release"]),
    ])
    reflex = ok(mcp_a, "brain_teach_knowledge", {"rule": "type-hint public functions", "type": "reflex",
                                                 "tags": ["python"]})
    peer_card_set(user=tenant_a.user, facts={"editor": "helix"})
    sid = ok(mcp_a, "brain_start_session", {"prompt": "p" * 300})["sessionId"]
    ok(mcp_a, "brain_report_session_outcome", {"sessionId": sid, "success": True})
    card_keys = ["email", "facts", "updatedAt"]
    row_keys = ["id", "type", "trigger", "rule", "rationale", "confidence", "stage", "projectId"]
    style = read_resource(mcp_a, "brain://user/style-profile")
    assert list(style) == ["peerCard", "reflexes"] and list(style["peerCard"]) == card_keys
    assert [list(r) for r in style["reflexes"]] == [row_keys]  # no tags, score or why, unlike the tool
    assert (style["reflexes"][0]["id"], style["reflexes"][0]["stage"]) == (reflex["id"], None)
    skills = read_resource(mcp_a, "brain://user/active-skills")["skills"]
    assert [list(r) for r in skills] == [row_keys] and skills[0]["stage"] == "wisdom"
    recent = read_resource(mcp_a, "brain://user/recent-sessions")["sessions"]
    assert list(recent[0]) == ["sessionId", "projectId", "projectName", "clientType", "prompt", "startedAt",
                               "endedAt", "success", "sqs"]
    assert (recent[0]["sessionId"], len(recent[0]["prompt"]), recent[0]["success"]) == (sid, 240, True)
    card = read_resource(mcp_a, "brain://user/peer-card")
    assert list(card) == card_keys and card["facts"] == {"editor": "helix"} and card["updatedAt"]
    assert read_resource(mcp_b, "brain://user/style-profile") == {
        "peerCard": {"email": "bob@b.example", "facts": {}, "updatedAt": None}, "reflexes": []}
    assert read_resource(mcp_b, "brain://user/active-skills") == {"skills": []}
    assert read_resource(mcp_b, "brain://user/recent-sessions") == {"sessions": []}


def test_a_budget_too_small_says_why_nothing_was_injected(mcp_a: Mcp, mcp_b: Mcp) -> None:
    rule = "when writing database migrations " + "always keep them reversible and small, one change each; " * 6
    ok(mcp_a, "brain_teach_knowledge", {"rule": rule, "trigger": "writing database migrations"})
    small = ok(mcp_a, "brain_retrieve_knowledge", {"prompt": "writing database migrations", "budgetTokens": 50})
    assert small["injection"] == "" and small["bundle"]["items"]
    assert "none fits in 50 tokens" in small["bundle"]["notice"] and "raise budgetTokens" in small["bundle"]["notice"]
    roomy = ok(mcp_a, "brain_retrieve_knowledge", {"prompt": "writing database migrations", "budgetTokens": 1000})
    assert roomy["injection"] and "budgetTokens" not in (roomy["bundle"].get("notice") or "")
    assert ok(mcp_b, "brain_retrieve_knowledge", {"prompt": "writing database migrations"})["bundle"]["items"] == []
