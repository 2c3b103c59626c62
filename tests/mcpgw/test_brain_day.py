"""End to end: a realistic agent day over a live server with the `mcp` package's client.

start (projectName) -> teach two rules -> a new session whose prompt matches one rule gets it injected ->
log a correction -> report with knowledgeUsed and one learning -> the counters moved, the session is
found by session search and the resources reflect it. The second tenant sees none of it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from knowledge.models import KnowledgeItem
from sessions.models import ApplicationRole, SessionKnowledgeApplication
from tests.conftest import Tenant

BRAIN_TOOLS = {
    "brain_start_session", "brain_create_project", "brain_list_projects", "brain_get_active_project",
    "brain_retrieve_knowledge", "brain_report_session_outcome", "brain_teach_knowledge", "brain_get_user_style",
    "brain_ask_oracle", "brain_log_event", "brain_find_skill", "brain_session_search",
}
RESOURCES = {"brain://user/style-profile", "brain://user/active-skills", "brain://user/recent-sessions",
             "brain://user/peer-card"}


@asynccontextmanager
async def connect(url: str, raw_token: str) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {raw_token}"})
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        yield client


async def call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


async def call_error(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


async def read(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    return json.loads(result.contents[0].text)  # type: ignore[union-attr]


async def agent_day(url: str, a: Tenant) -> dict[str, Any]:
    async with connect(url, a.user_raw) as client:
        assert {t.name for t in (await client.list_tools()).tools} == BRAIN_TOOLS
        assert {str(r.uri) for r in (await client.list_resources()).resources} == RESOURCES
        first = await call(client, "brain_start_session", {"clientType": "claude_code", "projectName": "Agent Day"})
        project_id = first["projectId"]
        validator = await call(client, "brain_teach_knowledge", {
            "type": "reflex", "trigger": "writing pydantic validators", "projectId": project_id,
            "rule": "use field_validator with mode='after' and return the value"})
        await call(client, "brain_teach_knowledge", {
            "type": "recipe", "trigger": "deploying with docker compose", "projectId": project_id,
            "rule": "run database migrations in a one-off container before starting web"})
        await call(client, "brain_report_session_outcome", {"sessionId": first["sessionId"], "success": True})
        second = await call(client, "brain_start_session", {
            "clientType": "claude_code", "projectName": "agent day",
            "prompt": "add a pydantic validator that normalises e-mail addresses on the signup model"})
        assert second["projectId"] == project_id
        assert second["relevantKnowledge"]["knowledgeIds"][0] == validator["id"]
        logged = await call(client, "brain_log_event", {
            "sessionId": second["sessionId"], "eventType": "user_correction",
            "payload": {"message": "lower-case the domain only, keep the local part as typed"}})
        assert logged["accepted"] is True
        learning = {"trigger": "normalising e-mail addresses", "rule": "lower-case only the domain part",
                    "rationale": "local parts may be case-sensitive", "type": "heuristic",
                    "source": "user_correction", "confidence": 0.9}
        report = {"sessionId": second["sessionId"], "success": True, "userFeedback": "up", "filesModified": 2,
                  "knowledgeUsed": [validator["id"]], "learnings": [learning]}
        closed = await call(client, "brain_report_session_outcome", report)
        again = await call(client, "brain_report_session_outcome", report)
        found = await call(client, "brain_session_search", {"query": "normalise e-mail addresses signup"})
        resources = {uri: await read(client, uri) for uri in RESOURCES}
    return {"project_id": project_id, "validator": validator, "second": second, "closed": closed, "again": again,
            "found": found, "resources": resources}


async def outsider_view(url: str, b: Tenant, a_project_raw: str, a_session: str, a_project: str) -> dict[str, Any]:
    async with connect(url, b.user_raw) as client:
        found = await call(client, "brain_session_search", {"query": "normalise e-mail addresses signup"})
        style = await read(client, "brain://user/style-profile")
        report_err = await call_error(client, "brain_report_session_outcome", {"sessionId": a_session,
                                                                               "success": False})
        log_err = await call_error(client, "brain_log_event", {"sessionId": a_session, "eventType": "note"})
        start_err = await call_error(client, "brain_start_session", {"projectId": a_project})
    async with connect(url, a_project_raw) as client:  # tenant_a's token bound to its first project
        scoped_err = await call_error(client, "brain_start_session", {"projectId": a_project})
        scoped_search = await call(client, "brain_session_search", {"query": "normalise e-mail addresses"})
    return {"found": found, "style": style, "report_err": report_err, "log_err": log_err, "start_err": start_err,
            "scoped_err": scoped_err, "scoped_search": scoped_search}


@pytest.mark.django_db(transaction=True)
def test_agent_day(live_server: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    day = anyio.run(agent_day, live_server.url, tenant_a)
    closed, validator_id = day["closed"], day["validator"]["id"]
    assert closed["sqs"] == 100 and closed["alreadyClosed"] is False and "hint" not in closed
    assert [a["rule"] for a in closed["learnings"]["accepted"]] == ["lower-case only the domain part"]
    assert day["again"] == {**closed, "alreadyClosed": True}
    rule = KnowledgeItem.objects.get(id=validator_id)
    assert (rule.success_count, rule.failure_count) == (1, 0)  # injected and reported: counted once
    roles = set(SessionKnowledgeApplication.objects.filter(knowledge=rule).values_list("role", flat=True))
    assert roles == {ApplicationRole.INJECTED, ApplicationRole.USED_REPORTED}
    assert day["found"]["sessions"][0]["sessionId"] == day["second"]["sessionId"]
    recent = day["resources"]["brain://user/recent-sessions"]["sessions"]
    assert recent[0]["sessionId"] == day["second"]["sessionId"] and recent[0]["sqs"] == 100
    style = day["resources"]["brain://user/style-profile"]
    assert [r["id"] for r in style["reflexes"]] == [validator_id]
    assert day["resources"]["brain://user/peer-card"]["email"] == "alice@a.example"
    assert day["resources"]["brain://user/active-skills"] == {"skills": []}

    seen = anyio.run(outsider_view, live_server.url, tenant_b, tenant_a.project_raw, day["second"]["sessionId"],
                     day["project_id"])
    assert seen["found"]["sessions"] == [] and seen["style"]["reflexes"] == []
    assert "NOT_FOUND" in seen["report_err"] and "NOT_FOUND" in seen["log_err"]
    assert "FORBIDDEN_PROJECT" in seen["start_err"] and "FORBIDDEN_PROJECT" in seen["scoped_err"]
    assert seen["scoped_search"]["sessions"] == []  # the Agent Day sessions live outside the token's project
