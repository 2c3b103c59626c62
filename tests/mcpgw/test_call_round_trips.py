"""A handshake-era tools/call reads token, user, project and session and counts the call in one statement:
the same checks as the step-by-step path (revocation on the next call, the session's own token only)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from mcpgw import protocol as p
from mcpgw.models import McpSession
from projects.models import ApiToken, Membership, Org, Project
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from projects.services.accounts import token_revoke
from tests.mcpgw.conftest import Mcp, call_tool


def _projects(result: dict) -> list[str]:
    return [project["name"] for project in result["structuredContent"]["projects"]]


def test_listing_projects_costs_one_statement_and_counts_once(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    call_tool(mcp_a, "brain_list_projects", session=session)  # token last_used_at written here, not below
    with CaptureQueriesContext(connection) as queries:
        result = call_tool(mcp_a, "brain_list_projects", session=session)
    assert _projects(result) == [tenant_a.project.name]
    # One statement: the UPDATE ... RETURNING for token + user + project + session + count, joined to the list.
    assert len(queries.captured_queries) == 1, [q["sql"][:80] for q in queries.captured_queries]
    assert McpSession.objects.get(pk=session).tool_call_count == 2


def test_other_tools_count_the_call_without_reading_the_projects(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    call_tool(mcp_a, "brain_list_projects", session=session)
    with CaptureQueriesContext(connection) as queries:
        call_tool(mcp_a, "brain_get_user_style", {}, session=session)
    statements = [q["sql"] for q in queries.captured_queries]
    assert any("EXECUTE brain_tool_call(" in s for s in statements), [s[:80] for s in statements]
    assert not any("brain_tool_call_listed" in s for s in statements)
    assert McpSession.objects.get(pk=session).tool_call_count == 2


def test_the_one_statement_list_keeps_the_order_and_the_scope(mcp_a: Mcp, tenant_a, tenant_b) -> None:
    """Personal org first, then by creation; a shared org's project after; another tenant's never; a user who
    sees no project gets an empty list from the same one statement."""
    shared = Org.objects.create(name="Shared Org", slug="shared-org-rt")
    Membership.objects.create(org=shared, user=tenant_a.user, role="member")
    Project.objects.create(org=shared, name="Shared App", slug="shared-app-rt")
    Project.objects.create(org=tenant_a.project.org, name="Second Own", slug="second-own-rt")
    session = mcp_a.initialize()
    with CaptureQueriesContext(connection) as queries:
        listed = _projects(call_tool(mcp_a, "brain_list_projects", session=session))
    assert listed == [p.name for p in projects_visible(principal=Principal(user=tenant_a.user))]
    assert listed == [tenant_a.project.name, "Second Own", "Shared App"]
    assert sum("EXECUTE" in q["sql"] for q in queries.captured_queries) == 1
    active = call_tool(mcp_a, "brain_get_active_project", session=session)["structuredContent"]["project"]
    assert (active["id"], active["source"]) == (str(tenant_a.project.pk), "first_project_fallback")
    Membership.objects.filter(user=tenant_a.user).delete()
    assert _projects(call_tool(mcp_a, "brain_list_projects", session=session)) == []
    assert call_tool(mcp_a, "brain_get_active_project", session=session)["structuredContent"]["project"] is None
    assert McpSession.objects.get(pk=session).tool_call_count == 4
    assert "Bravo App" not in listed


@pytest.mark.django_db(transaction=True)  # autocommit, as served: the relaxed commit applies only there
def test_the_counted_call_leaves_later_writes_durable(mcp_a: Mcp, tenant_a, tenant_b) -> None:
    """The count's UPDATE commits without waiting for the WAL flush; nothing after it on the connection does."""
    session = mcp_a.initialize()
    for _ in range(3):
        call_tool(mcp_a, "brain_list_projects", session=session)
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone() == ("on",)
    assert McpSession.objects.get(pk=session).tool_call_count == 3
    assert not McpSession.objects.filter(token__user=tenant_b.user).exists()


@pytest.mark.django_db(transaction=True)
def test_statements_forgotten_by_the_server_are_prepared_again(mcp_a: Mcp, tenant_a, tenant_b) -> None:
    """The per-call statements are prepared once per connection; a pooler's DEALLOCATE / DISCARD costs one retry."""
    session = mcp_a.initialize()
    call_tool(mcp_a, "brain_list_projects", session=session)
    with CaptureQueriesContext(connection) as queries:
        call_tool(mcp_a, "brain_list_projects", session=session)
    assert [q["sql"].split(" ")[-1][:30] for q in queries.captured_queries if "PREPARE" in q["sql"]] == []
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    with CaptureQueriesContext(connection) as queries:
        result = call_tool(mcp_a, "brain_list_projects", session=session)
    assert _projects(result) == [tenant_a.project.name]
    prepared = [q["sql"][:30] for q in queries.captured_queries if q["sql"].startswith("PREPARE")]
    assert prepared == ["PREPARE brain_tool_call_listed"]
    assert McpSession.objects.get(pk=session).tool_call_count == 3
    assert not McpSession.objects.filter(token__user=tenant_b.user).exists()


def test_project_scoped_token_keeps_its_scope(client, tenant_a) -> None:
    mcp = Mcp(client, tenant_a.project_raw)
    session = mcp.initialize()
    result = call_tool(mcp, "brain_get_active_project", session=session)
    assert result["structuredContent"]["project"]["source"] == "token_scope"
    assert result["structuredContent"]["project"]["id"] == str(tenant_a.project.pk)


def test_other_tenant_token_gets_mismatch_and_counts_nothing(mcp_a: Mcp, mcp_b: Mcp) -> None:
    session = mcp_a.initialize()
    response = mcp_b.legacy(session, "tools/call", {"name": "brain_list_projects", "arguments": {}})
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Session-token mismatch"
    assert McpSession.objects.get(pk=session).tool_call_count == 0
    # tenant_b's own session sees only tenant_b's project.
    own = mcp_b.initialize()
    assert _projects(call_tool(mcp_b, "brain_list_projects", session=own)) == ["Bravo App"]


def test_revocation_holds_on_the_very_next_tool_call(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    call_tool(mcp_a, "brain_list_projects", session=session)
    token_revoke(user=tenant_a.user, token_id=tenant_a.user_token.pk)
    response = mcp_a.legacy(session, "tools/call", {"name": "brain_list_projects", "arguments": {}})
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]
    assert McpSession.objects.get(pk=session).tool_call_count == 1


def test_expired_token_inactive_user_and_idle_session_fall_back_to_precise_errors(mcp_a: Mcp, tenant_a) -> None:
    session = mcp_a.initialize()
    params = {"name": "brain_list_projects", "arguments": {}}
    McpSession.objects.filter(pk=session).update(created_at=timezone.now() - timedelta(days=2),
                                                 last_seen_at=timezone.now() - timedelta(days=2))
    assert mcp_a.legacy(session, "tools/call", params).status_code == 404
    fresh = mcp_a.initialize()
    type(tenant_a.user).objects.filter(pk=tenant_a.user.pk).update(is_active=False)
    assert mcp_a.legacy(fresh, "tools/call", params).status_code == 401
    type(tenant_a.user).objects.filter(pk=tenant_a.user.pk).update(is_active=True)
    ApiToken.objects.filter(pk=tenant_a.user_token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert mcp_a.legacy(fresh, "tools/call", params).status_code == 401
    assert McpSession.objects.get(pk=fresh).tool_call_count == 0


def test_missing_session_header_and_bad_version_keep_their_answers(mcp_a: Mcp) -> None:
    params = {"name": "brain_list_projects", "arguments": {}}
    assert mcp_a.request("tools/call", params).status_code == 400
    session = mcp_a.initialize()
    bad = mcp_a.request("tools/call", params, **{p.SESSION_HEADER: session, p.VERSION_HEADER: "1999-01-01"})
    assert bad.status_code == 400
    assert McpSession.objects.get(pk=session).tool_call_count == 0


def test_bad_token_wins_over_a_bad_body(client, tenant_a) -> None:
    response = Mcp(client, "eb_not_a_token").post(None, raw_body=b"{not json")
    assert response.status_code == 401


def _opened(mcp: Mcp, session: str, arguments: dict) -> tuple[dict, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        opened = call_tool(mcp, "brain_start_session", arguments, session=session)["structuredContent"]
    return opened, [q["sql"] for q in queries.captured_queries]


def test_a_session_opened_in_the_first_project_reads_it_with_the_call(mcp_a: Mcp, tenant_a, tenant_b) -> None:
    """No statement of its own for the project an open lands in: the counted call's reads the first visible one,
    the very project the step-by-step resolution picks (personal org first, then by creation), never another
    tenant's; a named project takes the plain call and its own resolution."""
    Project.objects.create(org=tenant_a.project.org, name="Second Own", slug="second-own-first")
    shared = Org.objects.create(name="Shared First", slug="shared-first-rt")
    Membership.objects.create(org=shared, user=tenant_a.user, role="member")
    Project.objects.create(org=shared, name="Shared First App", slug="shared-first-app")
    session = mcp_a.initialize()
    opened, statements = _opened(mcp_a, session, {"prompt": "fix the flaky login test"})
    assert (opened["projectId"], opened["projectSource"]) == (str(tenant_a.project.pk), "first_project_fallback")
    assert opened["projectId"] == str(projects_visible(principal=Principal(user=tenant_a.user))[0].pk)
    assert any("EXECUTE brain_tool_call_first(" in s for s in statements), [s[:60] for s in statements]
    assert not any("brain_projects_listed" in s for s in statements), [s[:60] for s in statements]

    named, statements = _opened(mcp_a, session, {"prompt": "x", "projectName": "Second Own"})
    assert named["projectSource"] == "project_name"
    assert any("EXECUTE brain_tool_call(" in s for s in statements)
    addressed, statements = _opened(mcp_a, session, {"projectId": str(tenant_a.project.pk)})
    assert (addressed["projectId"], addressed["projectSource"]) == (str(tenant_a.project.pk), "project_id")
    assert not any("brain_tool_call_first" in s for s in statements)
    assert McpSession.objects.get(pk=session).tool_call_count == 3
    assert str(tenant_b.project.pk) not in {opened["projectId"], named["projectId"], addressed["projectId"]}


def test_a_caller_who_sees_no_project_still_gets_a_default_one(mcp_a: Mcp, tenant_a, tenant_b) -> None:
    """The first-project read finds none (an empty list, not "not read"), so the open creates "Default"."""
    Membership.objects.filter(user=tenant_a.user).delete()
    session = mcp_a.initialize()
    opened, statements = _opened(mcp_a, session, {"prompt": "set up the repo"})
    assert opened["projectSource"] == "default_created"
    assert Project.objects.get(pk=opened["projectId"]).name == "Default"
    assert any("EXECUTE brain_tool_call_first(" in s for s in statements)
    assert opened["projectId"] != str(tenant_b.project.pk)
