"""An unexpected exception anywhere behind /mcp is a JSON-RPC internal error (-32603) whose message names a
short ref that is also on the error's log line (with the traceback), never an HTML page. The faults are
injected by making a service the request goes through raise, as a failing database or bug would."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from brain.logs import LogfmtFormatter
from knowledge.models import KnowledgeItem
from mcpgw import protocol as p
from mcpgw.models import McpSession
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp

pytestmark = pytest.mark.django_db


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the disk is on fire")


def _internal(response: Any, caplog: pytest.LogCaptureFixture, request_id: int | None) -> dict[str, Any]:
    """Asserts the -32603 answer and its one log line; returns that line's fields."""
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id
    error = body["error"]
    ref = error["data"]["ref"]
    assert error["code"] == p.INTERNAL_ERROR and re.fullmatch(r"[0-9a-f]{8}", ref)
    assert f"(ref {ref})" in error["message"] and "on fire" not in error["message"]
    records = [r for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "mcp.internal_error"]
    assert len(records) == 1 and records[0].levelno == logging.ERROR
    record = records[0]
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    line = LogfmtFormatter().format(record)
    assert f"ref={ref}" in line and "error=RuntimeError" in line and "the disk is on fire" in line
    fields: dict[str, Any] = record.op_fields  # type: ignore[attr-defined]
    return fields


def test_a_failing_tool_is_32603_with_a_logged_ref(mcp_a: Mcp, caplog: pytest.LogCaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch, tenant_b: Tenant) -> None:
    monkeypatch.setattr("mcpgw.tools.brain_knowledge.knowledge_teach", _boom)
    params = {"name": "brain_teach_knowledge", "arguments": {"rule": "indent with tabs"}}
    fields = _internal(mcp_a.modern("tools/call", params), caplog, mcp_a.ids)
    assert (fields["method"], fields["tool"]) == ("tools/call", "brain_teach_knowledge")
    assert not KnowledgeItem.objects.exists()


def test_the_handshake_era_answers_the_same_with_the_request_id(mcp_a: Mcp, caplog: pytest.LogCaptureFixture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    session = mcp_a.initialize()
    monkeypatch.setattr("mcpgw.tools.brain_sessions.sessions_find", _boom)
    response = mcp_a.legacy(session, "tools/call", {"name": "brain_session_search", "arguments": {"query": "deploy"}})
    assert _internal(response, caplog, mcp_a.ids)["tool"] == "brain_session_search"
    assert mcp_a.legacy(session, "ping").json()["result"] == {}  # the session survives the failure


def test_a_failure_outside_any_method_is_32603_too(mcp_a: Mcp, caplog: pytest.LogCaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    session = mcp_a.initialize()
    monkeypatch.setattr("mcpgw.era_legacy.mcp_session_seen", _boom)  # before dispatch, in the transport
    fields = _internal(mcp_a.legacy(session, "ping"), caplog, None)
    assert (fields["http"], fields["path"]) == ("POST", "/mcp")


def test_a_failure_while_authenticating_is_32603(mcp_a: Mcp, caplog: pytest.LogCaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpgw.auth.token_touch", _boom)
    _internal(mcp_a.request("initialize", {"protocolVersion": "2025-11-25"}), caplog, None)
    assert McpSession.objects.count() == 0


@pytest.mark.parametrize("origin", ["http://[", "http://[::1", "https://[nope]:80"])
@pytest.mark.parametrize("with_token", [True, False])
def test_a_malformed_origin_is_a_refused_origin(mcp_a: Mcp, origin: str, with_token: bool) -> None:
    if not with_token:
        mcp_a.raw = None
    response = mcp_a.request("initialize", {"protocolVersion": "2025-11-25"}, Origin=origin)
    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == p.INVALID_REQUEST and "Origin is not allowed" in error["message"]
    assert McpSession.objects.count() == 0
