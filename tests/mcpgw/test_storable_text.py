"""Text PostgreSQL cannot store (a NUL, a lone surrogate) in any text argument of a tool, nested ones
included, is a VALIDATION result naming the field, over the real /mcp endpoint; nothing is stored and
the second tenant sees no change. The same for initialize's clientInfo."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from knowledge.models import KnowledgeItem
from mcpgw import protocol as p
from mcpgw.models import McpSession
from projects.models import AuditEvent, Project
from sessions.models import Session, SessionEvent, SessionKnowledgeApplication
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, call_tool, error_of

pytestmark = pytest.mark.django_db
BAD = {"nul": "\x00", "surrogate": "\ud800"}
Args = Callable[[str, str], dict[str, Any]]
LEARNING = {"trigger": "when deploying", "rule": "run the migrations first", "rationale": "the app needs them",
            "type": "recipe", "source": "user_correction", "confidence": 0.9}

# (tool, arguments built from the bad character and an open session id, the field the error must name)
CASES: list[tuple[str, Args, str]] = [
    ("brain_teach_knowledge", lambda c, sid: {"rule": f"indent with {c} tabs"}, "rule"),
    ("brain_teach_knowledge", lambda c, sid: {"rule": "indent with tabs", "tags": ["style", f"t{c}"]}, "tags[1]"),
    ("brain_teach_knowledge", lambda c, sid: {"rule": "indent with tabs", "rationale": f"why {c}"}, "rationale"),
    ("brain_start_session", lambda c, sid: {"prompt": f"fix the {c} bug"}, "prompt"),
    ("brain_start_session", lambda c, sid: {"projectName": f"New {c} app"}, "projectName"),
    ("brain_log_event", lambda c, sid: {"sessionId": sid, "eventType": "note",
                                        "payload": {"text": "fine", "deep": {"list": ["ok", f"x{c}"]}}},
     "payload.deep.list[1]"),
    ("brain_log_event", lambda c, sid: {"sessionId": sid, "eventType": "note", "payload": {f"k{c}": "v"}},
     "a key of payload"),
    ("brain_session_search", lambda c, sid: {"query": f"deploy {c}"}, "query"),
    ("brain_ask_oracle", lambda c, sid: {"question": f"how did I {c} deploy?"}, "question"),
    ("brain_retrieve_knowledge", lambda c, sid: {"prompt": f"deploy {c}", "context": {"sessionId": sid}}, "prompt"),
    ("brain_retrieve_knowledge", lambda c, sid: {"prompt": "deploy", "context": {"sessionId": sid,
                                                                                "framework": f"dj{c}"}},
     "framework"),
    ("brain_find_skill", lambda c, sid: {"query": f"release {c}"}, "query"),
    ("brain_report_session_outcome", lambda c, sid: {"sessionId": sid, "success": True, "summary": f"done {c}"},
     "summary"),
    ("brain_report_session_outcome", lambda c, sid: {"sessionId": sid, "success": True,
                                                     "learnings": [{**LEARNING, "rule": f"run {c} first"}]},
     "learnings[0].rule"),
    ("brain_report_session_outcome", lambda c, sid: {"sessionId": sid, "success": False, "errors": [f"E{c}"]},
     "errors[0]"),
    ("brain_create_project", lambda c, sid: {"name": f"Proj {c}"}, "name"),
]


def _names(message: str, field: str, char: str) -> bool:
    """The core's message names the field first; a surrogate in a `str`-typed argument is already refused
    by the input model (pydantic cannot hold one in a str), whose message names the same field dotted."""
    if char == "\x00":
        return message.startswith(f"{field} must not contain NUL")
    dotted = re.sub(r"\[(\d+)\]", r".\1", field).removeprefix("a key of ")
    by_model = re.search(rf"[ .]{re.escape(dotted)}[:.]", message) is not None and "valid string" in message
    return by_model or message.startswith(f"{field} must be valid Unicode")


def _rows() -> dict[str, int]:
    models = (Project, Session, SessionEvent, SessionKnowledgeApplication, KnowledgeItem, AuditEvent, McpSession)
    return {model.__name__: model.objects.count() for model in models}


def _tenant_rows(tenant: Tenant) -> tuple[int, int, int]:
    return (Session.objects.filter(user=tenant.user).count(), KnowledgeItem.objects.filter(owner=tenant.user).count(),
            Project.objects.filter(org__memberships__user=tenant.user).count())


@pytest.mark.parametrize("char", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize(("tool", "build", "field"), CASES, ids=[f"{t}-{f}" for t, _, f in CASES])
def test_unstorable_text_is_validation_naming_the_field(
    mcp_a: Mcp, tenant_a: Tenant, tenant_b: Tenant, tool: str, build: Args, field: str, char: str
) -> None:
    started = call_tool(mcp_a, "brain_start_session", {"prompt": "wire the deploy"})["structuredContent"]
    sid = started["sessionId"]
    before, other = _rows(), _tenant_rows(tenant_b)
    result = call_tool(mcp_a, tool, build(char, sid))
    assert result["isError"] is True, result
    error = error_of(result)
    assert error["code"] == "VALIDATION" and _names(error["message"], field, char), error
    assert _rows() == before and _tenant_rows(tenant_b) == other
    assert Session.objects.get(pk=sid).ended_at is None  # a refused report closes nothing


def test_the_handshake_era_refuses_the_same_way(mcp_a: Mcp) -> None:
    session = mcp_a.initialize()
    before = _rows()
    response = mcp_a.legacy(session, "tools/call", {"name": "brain_teach_knowledge",
                                                    "arguments": {"rule": "tabs \x00 everywhere"}})
    assert response.status_code == 200
    assert error_of(response.json()["result"])["code"] == "VALIDATION"
    assert _rows() == before


@pytest.mark.parametrize("char", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("key", ["name", "version"])
def test_initialize_refuses_unstorable_client_info(mcp_a: Mcp, tenant_b: Tenant, key: str, char: str) -> None:
    info = {"name": "pytest", "version": "1", key: f"x{char}y"}
    response = mcp_a.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == p.INVALID_PARAMS and f"params.clientInfo.{key} must " in error["message"], error
    assert McpSession.objects.count() == 0
    assert mcp_a.initialize()  # a clean clientInfo still opens a session
