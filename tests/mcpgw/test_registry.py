"""tools/list: fixed order, generated schemas (snapshot), annotations; resources wired to the registry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcpgw.registry import REGISTRY, TOOL_ORDER, Resource
from tests.mcpgw.conftest import Mcp

SNAPSHOT = Path(__file__).parent / "snapshots" / "project_tools.json"
PROJECT_TOOLS = ("brain_create_project", "brain_list_projects", "brain_get_active_project")


def _listed(mcp: Mcp) -> list[dict]:
    return mcp.modern("tools/list").json()["result"]["tools"]


def test_tools_follow_the_spec_order(mcp_a: Mcp) -> None:
    names = [t["name"] for t in _listed(mcp_a)]
    assert set(PROJECT_TOOLS) <= set(names)
    assert names == sorted(names, key=TOOL_ORDER.index)
    session = mcp_a.initialize()
    assert [t["name"] for t in mcp_a.legacy(session, "tools/list").json()["result"]["tools"]] == names


def test_every_tool_has_closed_schemas_title_and_annotations(mcp_a: Mcp) -> None:
    for tool in _listed(mcp_a):
        for key in ("inputSchema", "outputSchema"):
            assert tool[key]["type"] == "object" and tool[key]["additionalProperties"] is False, tool["name"]
        assert tool["title"] and len(tool["description"]) > 60
        assert tool["annotations"]["readOnlyHint"] in (True, False)


def test_project_tool_definitions_match_snapshot(mcp_a: Mcp) -> None:
    current = [t for t in _listed(mcp_a) if t["name"] in PROJECT_TOOLS]
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=2) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())
    read_only = {t["name"]: t["annotations"]["readOnlyHint"] for t in current}
    assert read_only == {"brain_create_project": False, "brain_list_projects": True,
                         "brain_get_active_project": True}


@pytest.fixture
def whoami_resource():
    resource = REGISTRY.add_resource(Resource(
        uri="brain://test/whoami", name="whoami", title="Who am I", description="The caller's e-mail.",
        reader=lambda principal: {"email": principal.user.email}))
    yield resource
    REGISTRY.remove_resource(resource.uri)


def test_resources_list_and_read_through_the_registry(mcp_a: Mcp, mcp_b: Mcp, whoami_resource) -> None:
    listed = mcp_a.modern("resources/list").json()["result"]["resources"]
    assert {"uri": "brain://test/whoami", "name": "whoami", "title": "Who am I",
            "description": "The caller's e-mail.", "mimeType": "application/json"} in listed
    for mcp, email in ((mcp_a, "alice@a.example"), (mcp_b, "bob@b.example")):
        contents = mcp.modern("resources/read", {"uri": "brain://test/whoami"}).json()["result"]["contents"]
        assert json.loads(contents[0]["text"]) == {"email": email}
