"""The nine brain tools' generated definitions (schemas, titles, annotations) against a snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.mcpgw.conftest import Mcp

SNAPSHOT = Path(__file__).parent / "snapshots" / "brain_tools.json"
BRAIN_TOOLS = (
    "brain_start_session", "brain_retrieve_knowledge", "brain_report_session_outcome", "brain_teach_knowledge",
    "brain_get_user_style", "brain_ask_oracle", "brain_log_event", "brain_find_skill", "brain_session_search",
)
READ_ONLY = {"brain_get_user_style", "brain_ask_oracle", "brain_find_skill", "brain_session_search"}


def test_brain_tool_definitions_match_snapshot(mcp_a: Mcp) -> None:
    listed = mcp_a.modern("tools/list").json()["result"]["tools"]
    current = [t for t in listed if t["name"] in BRAIN_TOOLS]
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=2) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())
    assert {t["name"] for t in current if t["annotations"]["readOnlyHint"]} == READ_ONLY
    report = next(t for t in current if t["name"] == "brain_report_session_outcome")
    fields = set(report["inputSchema"]["properties"])
    assert {"sessionId", "knowledgeUsed", "learnings", "resolvedActionItemIds"} <= fields
    assert report["inputSchema"]["required"] == ["sessionId", "success"]
