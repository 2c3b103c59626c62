"""The Cognibrain profile over /mcp/cognibrain: listing, every tool, validation, two tenants, a project token."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from knowledge.guard_models import GuardDecision, GuardPattern
from knowledge.models import KnowledgeItem
from sessions.models import Session, SessionEvent, SessionKnowledgeApplication
from tests.conftest import Tenant
from tests.mcpgw.conftest import Cog, Mcp, call_tool, error_of, ops

pytestmark = pytest.mark.django_db
NINE = ["cognibrain_context", "cognibrain_coding_context", "cognibrain_guard", "cognibrain_memory_add",
        "cognibrain_correction", "cognibrain_patch_evidence", "cognibrain_health", "cognibrain_outcome",
        "cognibrain_session_end"]


def ok(mcp: Mcp, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = call_tool(mcp, name, args or {})
    assert not result.get("isError"), result
    data: dict[str, Any] = result["structuredContent"]
    return data


def code(mcp: Mcp, name: str, args: dict[str, Any]) -> str | None:
    result = call_tool(mcp, name, args)
    return error_of(result)["code"] if result.get("isError") else None


def test_nine_tools_in_both_eras_and_not_at_mcp(cog_a: Cog, mcp_a: Mcp) -> None:
    modern = cog_a.modern("tools/list").json()["result"]["tools"]
    assert [t["name"] for t in modern] == NINE
    session = cog_a.initialize()
    legacy = cog_a.legacy(session, "tools/list").json()["result"]["tools"]
    assert [t["name"] for t in legacy] == NINE
    brain = [t["name"] for t in mcp_a.modern("tools/list").json()["result"]["tools"]]
    assert brain and not any(n.startswith("cognibrain_") for n in brain)
    refused = mcp_a.modern("tools/call", {"name": "cognibrain_guard", "arguments": {"action": "ls"}}).json()
    assert refused["error"]["code"] == -32602 and "Unknown tool" in refused["error"]["message"]
    schemas = {t["name"]: t["inputSchema"] for t in modern}
    assert schemas["cognibrain_context"]["required"] == ["task"]
    assert schemas["cognibrain_context"]["properties"]["tokenBudget"]["default"] == 1200
    assert schemas["cognibrain_memory_add"]["properties"]["scope"]["enum"] == ["repo", "user", "global", "task"]
    assert schemas["cognibrain_memory_add"]["properties"]["scope"]["default"] == "repo"
    assert schemas["cognibrain_session_end"]["properties"]["runDreamIfDue"]["default"] is False
    assert schemas["cognibrain_outcome"]["required"] == ["command", "exitCode"]
    assert schemas["cognibrain_health"]["properties"] == {}


def test_transport_rules_are_those_of_mcp(client: Client, cog_a: Cog) -> None:
    assert Cog(client, None).modern("tools/list").status_code == 401
    assert Cog(client, "eb_wrong").modern("tools/list").status_code == 401
    assert cog_a.modern("tools/list", Origin="https://evil.example").status_code == 403
    big = b"{" + b" " * (2 * 1024 * 1024) + b"}"
    assert cog_a.post(None, raw_body=big).status_code == 413


def test_validation_stores_nothing(cog_a: Cog) -> None:
    bad = {
        "cognibrain_context": {"task": "", "tokenBudget": 0},
        "cognibrain_coding_context": {"files": ["a.py"]},
        "cognibrain_guard": {"action": ""},
        "cognibrain_memory_add": {"content": "x" * 10, "scope": "galaxy"},
        "cognibrain_correction": {"text": ""},
        "cognibrain_patch_evidence": {"files": []},
        "cognibrain_health": {"verbose": True},
        "cognibrain_outcome": {"command": "make"},
        "cognibrain_session_end": {"runDreamIfDue": "soon"},
    }
    for name, args in bad.items():
        assert code(cog_a, name, args) == "VALIDATION", name
    assert code(cog_a, "cognibrain_context", {"task": "build", "repo": "not a repo!"}) == "VALIDATION"
    assert code(cog_a, "cognibrain_memory_add", {"content": "  "}) == "VALIDATION"
    assert code(cog_a, "cognibrain_outcome", {"command": "   ", "exitCode": 1}) == "VALIDATION"
    assert KnowledgeItem.objects.count() == 0 and SessionEvent.objects.count() == 0


def test_a_file_or_command_over_its_cap_is_refused(cog_a: Cog) -> None:
    long_path = "src/" + "d" * 4093
    assert code(cog_a, "cognibrain_coding_context", {"task": "fix it", "files": ["a.py", long_path]}) == "VALIDATION"
    assert code(cog_a, "cognibrain_patch_evidence", {"task": "fixed it", "files": [long_path]}) == "VALIDATION"
    assert code(cog_a, "cognibrain_patch_evidence", {"task": "fixed it", "commands": ["x" * 2001]}) == "VALIDATION"
    assert SessionEvent.objects.count() == 0
    ok(cog_a, "cognibrain_patch_evidence", {"task": "fixed it", "files": [long_path[:4096]], "commands": ["x" * 2000]})
    assert SessionEvent.objects.count() == 1


def test_every_tool_two_tenants(cog_a: Cog, cog_b: Cog, tenant_a: Tenant, tenant_b: Tenant,
                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    pack = ok(cog_a, "cognibrain_context", {"task": "build the web app", "repo": "acme/web"})
    assert set(pack) == {"context", "memoriesUsed", "tokenCount"} and pack["memoriesUsed"] == 0
    session = Session.objects.get(user=tenant_a.user, client_type="cognibrain", ended_at__isnull=True)
    assert session.project.name == "acme/web" and session.project.org == tenant_a.project.org
    added = ok(cog_a, "cognibrain_memory_add", {"content": "Never edit dist/** (built by vite); edit src/ instead"})
    assert added["stored"] is True
    again = ok(cog_a, "cognibrain_memory_add", {"content": "never edit dist/** (built by vite); edit src/ instead"})
    assert again == {"id": added["id"], "stored": False}
    assert GuardPattern.objects.get(knowledge_id=added["id"]).pattern == "dist/**"
    blocked = ok(cog_a, "cognibrain_guard", {"action": "edit dist/app.js"})
    assert blocked["allowed"] is False and "edit src/" in blocked["blockers"][0]
    assert added["id"] in blocked["blockers"][0]
    assert ok(cog_a, "cognibrain_guard", {"action": "edit src/app.ts"}) == {"allowed": True, "warnings": [],
                                                                             "blockers": []}
    assert ok(cog_b, "cognibrain_guard", {"action": "edit dist/app.js"})["allowed"] is True
    decision = ops(caplog, "guard.decision")
    assert [d["allowed"] for d in decision] == [False, True, True]
    assert GuardDecision.objects.filter(owner=tenant_a.user).count() == 2
    fixed = ok(cog_a, "cognibrain_correction", {"text": "Use npm test, not pnpm test"})
    assert [s["type"] for s in fixed["stored"]] == ["anti_principle", "recipe"]
    coding = ok(cog_a, "cognibrain_coding_context", {"task": "run the tests", "files": ["src/app.ts"]})
    assert {"content": "Use npm test (not pnpm test).", "scope": "repo"} in coding["corrections"]
    evidence = ok(cog_a, "cognibrain_patch_evidence", {"task": "fix build", "files": ["src/app.ts"],
                                                       "commands": ["npm test"]})
    assert evidence["recorded"] is True and SessionEvent.objects.get(id=evidence["evidenceId"]).session == session
    outcome = ok(cog_a, "cognibrain_outcome", {"command": "npm test", "exitCode": 0})
    assert outcome["recorded"] is True and outcome["toolOutcomeMemoryId"] is None
    health = ok(cog_a, "cognibrain_health")
    assert health["memoryCount"] == 3 and health["status"] in ("healthy", "degraded")
    assert ok(cog_b, "cognibrain_health")["memoryCount"] == 0
    assert ok(cog_b, "cognibrain_coding_context", {"task": "run the tests"}) == {"corrections": [], "conventions": []}
    ended = ok(cog_a, "cognibrain_session_end")
    assert ended["sessionId"] == str(session.id) and ended["closed"] is True and ended["dreamQueued"] is False
    session.refresh_from_db()
    assert session.ended_at is not None and session.quality_score is not None
    assert ok(cog_a, "cognibrain_session_end")["closed"] is False
    assert not Session.objects.filter(user=tenant_b.user, client_type="cognibrain", project__name="acme/web").exists()


def test_memory_scopes_and_task_memories_end_with_the_session(cog_a: Cog, tenant_a: Tenant) -> None:
    ids = {scope: ok(cog_a, "cognibrain_memory_add", {"content": f"remember the {scope} fact", "scope": scope})["id"]
           for scope in ("repo", "user", "global", "task")}
    rows = {str(r.id): r for r in KnowledgeItem.objects.filter(id__in=ids.values())}
    assert rows[ids["repo"]].project_id == tenant_a.project.id
    assert rows[ids["user"]].project_id is None and rows[ids["global"]].project_id is None
    assert "scope:global" in rows[ids["global"]].tags
    ok(cog_a, "cognibrain_session_end")
    assert KnowledgeItem.objects.get(id=ids["task"]).deleted_at is not None
    assert KnowledgeItem.objects.get(id=ids["repo"]).deleted_at is None


def test_project_token_means_its_project(cog_scoped: Cog, tenant_a: Tenant) -> None:
    ok(cog_scoped, "cognibrain_context", {"task": "anything", "repo": "other/repo"})
    session = Session.objects.get(client_type="cognibrain")
    assert session.project == tenant_a.project
    refused = code(cog_scoped, "cognibrain_memory_add", {"content": "my own habit", "scope": "user"})
    assert refused == "FORBIDDEN_PROJECT"
    assert ok(cog_scoped, "cognibrain_memory_add", {"content": "this repo uses pnpm"})["stored"] is True


def test_context_records_injection(cog_a: Cog, tenant_a: Tenant) -> None:
    ok(cog_a, "cognibrain_correction", {"text": "Use npm test, not pnpm test"})
    pack = ok(cog_a, "cognibrain_context", {"task": "run the npm test suite"})
    assert pack["memoriesUsed"] >= 1 and "npm test" in pack["context"]
    assert pack["context"].index("Forbidden") < pack["context"].index("Procedures")
    session = Session.objects.get(client_type="cognibrain")
    assert SessionKnowledgeApplication.objects.filter(session=session, role="injected").count() == pack["memoriesUsed"]
