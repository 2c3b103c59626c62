"""Wire constants and JSON-RPC shapes of the two MCP eras this endpoint speaks.

Constants come from `mcp_types` (the SDK's type package) so names and codes cannot drift from the spec.
"""

from __future__ import annotations

from typing import Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)

__all__ = [
    "CLIENT_CAPABILITIES_META_KEY", "CLIENT_INFO_META_KEY", "HEADER_MISMATCH", "INTERNAL_ERROR",
    "INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR", "PROTOCOL_VERSION_META_KEY",
    "SERVER_INFO_META_KEY", "UNSUPPORTED_PROTOCOL_VERSION",
]

# Handshake era (initialize + Mcp-Session-Id) and the stateless era (per-request _meta).
LEGACY_VERSIONS: tuple[str, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
ALL_VERSIONS: tuple[str, ...] = (*LEGACY_VERSIONS, *MODERN_VERSIONS)
LATEST_LEGACY = LEGACY_VERSIONS[-1]

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# Which body parameter a name-bearing method mirrors in the Mcp-Name header.
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

# Our own transport-level code, as MCP servers commonly use it: no/unknown session, auth failures.
SESSION_ERROR = -32001
# Too many requests (HTTP 429): data.retryAfterSeconds says when to retry. In the implementation-defined range.
RATE_LIMITED = -32029
# The handshake era's "resource not found" (the stateless era uses INVALID_PARAMS with data.uri).
LEGACY_RESOURCE_NOT_FOUND = -32002

def request_id(message: dict[str, Any]) -> str | int | None:
    """The message's id when JSON-RPC allows it (a string or an integer), else None: an answer then carries null."""
    value = message.get("id")
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


SERVER_NAME = "external-brain"
SERVER_TITLE = "External Brain"

INSTRUCTIONS = (
    "External Brain is this user's long-term memory for coding work. Protocol:\n"
    "1. Open every task with brain_start_session and the task as `prompt`; apply the relevantKnowledge it "
    "returns (an injectionNotice says why nothing came).\n"
    "2. When the user corrects you, log it at once with brain_log_event (user_correction); log "
    "knowledge_rejected for an injected item that does not fit.\n"
    "3. Close with brain_report_session_outcome: knowledgeUsed (the ids you applied, short ids accepted) and "
    "learnings; never skip it, it is how the brain learns.\n"
    "brain_get_user_style loads the user's conventions at any time.\n"
)


# Stateless-era results of these methods carry cache hints. Everything here sits behind a bearer
# token, so no response may be shared across authorization contexts: scope is always "private".
CACHE_TTL_MS = {
    "server/discover": 300_000,
    "tools/list": 300_000,
    "resources/list": 60_000,
    "resources/templates/list": 300_000,
    "resources/read": 0,
    "prompts/list": 300_000,
}


class RpcError(Exception):
    """A JSON-RPC error to send back; `status` is the HTTP status that goes with it."""

    def __init__(self, code: int, message: str, *, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.data = data

    def body(self, request_id: Any) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return {"jsonrpc": "2.0", "id": request_id, "error": error}


# HTTP status of a JSON-RPC error in the stateless era (the spec ties them together).
MODERN_ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def server_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("external-brain")
    except PackageNotFoundError:  # running from a checkout without install metadata
        return "0.0.0"


def server_info() -> dict[str, str]:
    return {"name": SERVER_NAME, "title": SERVER_TITLE, "version": server_version()}


def capabilities() -> dict[str, Any]:
    return {"tools": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
            "prompts": {"listChanged": False}}
