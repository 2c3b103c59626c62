"""brain_create_project, brain_list_projects, brain_get_active_project: both eras, both token scopes,
and a second tenant that sees nothing of the first."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from mcpgw import protocol as p
from projects.models import Project
from projects.services.accounts import token_create, user_create
from tests.mcpgw.conftest import Mcp, call_tool, error_of


@pytest.fixture(params=["legacy", "modern"])
def era(request: pytest.FixtureRequest) -> str:
    return request.param


def _call(mcp: Mcp, era: str, name: str, arguments: dict | None = None) -> dict:
    session = mcp.initialize() if era == "legacy" else None
    result = call_tool(mcp, name, arguments, session=session)
    if not result["isError"]:
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result


def test_list_projects_user_token_sees_own_only(client: Client, tenant_a, tenant_b, era: str) -> None:
    projects = _call(Mcp(client, tenant_a.user_raw), era, "brain_list_projects")["structuredContent"]["projects"]
    assert [(x["name"], x["isOwn"], x["orgName"]) for x in projects] == [("Alpha App", True, "alice@a.example")]
    assert set(projects[0]) == {"id", "slug", "name", "orgId", "orgSlug", "orgName", "framework", "language",
                                "isOwn", "createdAt"}


def test_list_projects_project_token_sees_its_project(client: Client, tenant_a, tenant_b, era: str) -> None:
    Project.objects.create(org=tenant_a.project.org, name="Other", slug="other")
    user_view = _call(Mcp(client, tenant_a.user_raw), era, "brain_list_projects")["structuredContent"]
    assert [x["name"] for x in user_view["projects"]] == ["Alpha App", "Other"]
    scoped = _call(Mcp(client, tenant_a.project_raw), era, "brain_list_projects")["structuredContent"]
    assert [x["id"] for x in scoped["projects"]] == [str(tenant_a.project.pk)]


def test_create_project_is_idempotent_case_insensitive(client: Client, tenant_a, tenant_b, era: str) -> None:
    mcp = Mcp(client, tenant_a.user_raw)
    first = _call(mcp, era, "brain_create_project", {"name": "Acme Robotics", "framework": "react",
                                                     "language": "typescript"})["structuredContent"]
    again = _call(mcp, era, "brain_create_project", {"name": "acme ROBOTICS", "framework": "vue"})
    assert first["created"] is True and first["slug"] == "acme-robotics"
    assert again["structuredContent"] == {"projectId": first["projectId"], "slug": "acme-robotics", "created": False}
    project = Project.objects.get(pk=first["projectId"])
    assert (project.org.personal_for_id, project.framework) == (tenant_a.user.pk, "react")
    b_names = [x["name"] for x in _call(Mcp(client, tenant_b.user_raw), era, "brain_list_projects")
               ["structuredContent"]["projects"]]
    assert b_names == ["Bravo App"]


def test_create_project_refused_for_project_token(client: Client, tenant_a, era: str) -> None:
    result = _call(Mcp(client, tenant_a.project_raw), era, "brain_create_project", {"name": "Sneaky"})
    assert result["isError"] is True and error_of(result)["code"] == "FORBIDDEN_PROJECT"
    assert "user-scoped token" in result["content"][0]["text"]
    assert not Project.objects.filter(name="Sneaky").exists()


@pytest.mark.parametrize("arguments,needle", [
    ({}, "name"), ({"name": ""}, "name"), ({"name": "x" * 121}, "name"),
    ({"name": "ok", "framework": "f" * 61}, "framework"), ({"name": "ok", "color": "red"}, "color"),
    ({"name": "   "}, "name is required"),
])
def test_create_project_bad_arguments(client: Client, tenant_a, arguments: dict, needle: str) -> None:
    before = Project.objects.count()
    result = _call(Mcp(client, tenant_a.user_raw), "modern", "brain_create_project", arguments)
    error = error_of(result)
    assert result["isError"] is True and error["code"] == "VALIDATION" and needle in error["message"]
    assert Project.objects.count() == before


def test_active_project_sources(client: Client, tenant_a, tenant_b, era: str) -> None:
    user_view = _call(Mcp(client, tenant_a.user_raw), era, "brain_get_active_project")["structuredContent"]
    assert user_view == {"project": {"id": str(tenant_a.project.pk), "slug": "alpha-app", "name": "Alpha App",
                                     "orgName": "alice@a.example", "source": "first_project_fallback"}}
    scoped = _call(Mcp(client, tenant_b.project_raw), era, "brain_get_active_project")["structuredContent"]
    assert scoped["project"]["id"] == str(tenant_b.project.pk) and scoped["project"]["source"] == "token_scope"


def test_active_project_is_null_without_projects(client: Client, tenant_a, era: str) -> None:
    user = user_create(email="new@c.example")
    _, raw = token_create(user=user)
    assert _call(Mcp(client, raw), era, "brain_get_active_project")["structuredContent"] == {"project": None}
    assert Project.objects.filter(org__personal_for=user).count() == 0


def test_tool_calls_reject_non_object_arguments(client: Client, tenant_a) -> None:
    response = Mcp(client, tenant_a.user_raw).modern("tools/call", {"name": "brain_list_projects", "arguments": [1]})
    result = response.json()["result"]
    assert result["isError"] and error_of(result)["code"] == "VALIDATION"


def test_unknown_tool_is_a_jsonrpc_error(client: Client, tenant_a) -> None:
    response = Mcp(client, tenant_a.user_raw).modern("tools/call", {"name": "brain_nope", "arguments": {}})
    assert response.status_code == 400 and response.json()["error"]["code"] == p.INVALID_PARAMS
