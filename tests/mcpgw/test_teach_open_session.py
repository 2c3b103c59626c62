"""brain_teach_knowledge without projectId lands in the project of the caller's open session (the project the
agent works in), not in whichever project the first-project fallback would pick."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem
from tests.mcpgw.conftest import Mcp, call_tool

pytestmark = pytest.mark.django_db


def _teach(mcp: Mcp, rule: str) -> str:
    result = call_tool(mcp, "brain_teach_knowledge", {"rule": rule, "type": "reflex"})
    assert not result["isError"], result
    return str(result["structuredContent"]["projectId"])


def test_teach_follows_the_open_session(mcp_a: Mcp, mcp_b: Mcp, tenant_a, tenant_b) -> None:
    fallback = _teach(mcp_a, "Use pnpm in every repository")  # no session yet: the first-project fallback
    assert fallback == str(tenant_a.project.id)

    opened = call_tool(mcp_a, "brain_start_session", {"prompt": "fix the billing job", "projectName": "Billing"})
    working = opened["structuredContent"]["projectId"]
    assert working != fallback
    assert _teach(mcp_a, "Run the billing job with --dry-run first") == working

    call_tool(mcp_a, "brain_report_session_outcome", {"sessionId": opened["structuredContent"]["sessionId"],
                                                      "success": True})
    assert _teach(mcp_a, "Prefer small pull requests") == fallback  # closed: back to the fallback

    # Tenant B's open session changes nothing for A, and B's own rule stays in B's project
    call_tool(mcp_b, "brain_start_session", {"prompt": "bravo work"})
    assert _teach(mcp_b, "Bravo rule for bravo work") == str(tenant_b.project.id)
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user, project__org=tenant_a.project.org).exists()


def test_an_explicit_project_id_still_wins(mcp_a: Mcp, tenant_a) -> None:
    call_tool(mcp_a, "brain_start_session", {"prompt": "other work", "projectName": "Elsewhere"})
    result = call_tool(mcp_a, "brain_teach_knowledge", {"rule": "Pin every dependency", "type": "reflex",
                                                        "projectId": str(tenant_a.project.id)})
    assert result["structuredContent"]["projectId"] == str(tenant_a.project.id)
