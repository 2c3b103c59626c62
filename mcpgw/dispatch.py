"""JSON-RPC methods, shared by both eras. The view decides the era; this module does the work."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from brain.errors import RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, BrainError, database_unavailable
from brain.logs import failure_message, log_failure, log_op
from mcpgw import protocol as p
from mcpgw.models import McpSession
from mcpgw.profile import active_registry
from mcpgw.registry import REGISTRY, Tool
from mcpgw.services import mcp_session_seen
from projects.scope import Principal

logger = logging.getLogger("mcpgw")


@dataclass
class Call:
    """One request in flight: who calls, in which era, with which session (handshake era only)."""

    principal: Principal
    modern: bool
    version: str
    session: McpSession | None = None
    counted: bool = False  # the tool call was already counted on the session (one round trip in auth)


def internal_error(exc: BaseException, **fields: Any) -> p.RpcError:
    """Logs an unexpected exception (traceback, fresh correlation id) and returns the -32603 answer that
    names the same id, so a user's report leads to the log line. Nothing of the exception reaches the client.
    An unreachable database is not a bug: a retryable error (HTTP 503, data.retryable, retryAfterSeconds)."""
    if database_unavailable(exc):
        log_op(logger, "mcp.db_unavailable", level=logging.WARNING, error=type(exc).__name__, **fields)
        return p.RpcError(p.INTERNAL_ERROR, UNAVAILABLE_MESSAGE, status=503,
                          data={"retryable": True, "retryAfterSeconds": RETRY_AFTER_SECONDS})
    ref = log_failure(logger, "mcp.internal_error", exc, **fields)
    return p.RpcError(p.INTERNAL_ERROR, failure_message(ref), status=500, data={"ref": ref})


def _params(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise p.RpcError(p.INVALID_PARAMS, "params must be an object")
    return params


def tools_list(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    log_op(logger, "mcp.tools.list", sessionPrefix=call.session.prefix if call.session else None,
           version=call.version)
    return {"tools": [t.definition() for t in active_registry().tools()]}


def _error_result(code: str, message: str) -> dict[str, Any]:
    # Text only: structuredContent must fit the tool's outputSchema, which describes success, so an error
    # result carrying it fails schema-checking clients (the Inspector) and hides the message.
    payload = {"error": {"code": code, "message": message}}
    return {"content": [{"type": "text", "text": json.dumps(payload)}], "isError": True}


def error_of(result: dict[str, Any]) -> dict[str, str]:
    """The {code, message} of an error result (its text content)."""
    return dict(json.loads(result["content"][0]["text"])["error"])


def _loc(loc: tuple[int | str, ...]) -> str:
    # A dict key is echoed as sent; one that is not valid Unicode is shown escaped, never passed on raw.
    return ".".join(str(x) for x in loc).encode("utf-8", "backslashreplace").decode()


def _validation_message(tool: Tool, exc: ValidationError) -> str:
    problems = "; ".join(f"{_loc(err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()[:5])
    return f"invalid arguments for {tool.name}: {problems}. See the tool's inputSchema."


def _run_tool(call: Call, tool: Tool, arguments: Any) -> tuple[dict[str, Any], str]:
    try:
        args = tool.input_model.model_validate(arguments if arguments is not None else {})
    except ValidationError as exc:
        return _error_result("VALIDATION", _validation_message(tool, exc)), "invalid"
    try:
        out = tool.handler(call.principal, args)
    except BrainError as exc:
        return _error_result(exc.code, exc.message), "error"
    structured = out.model_dump(mode="json", by_alias=True)
    return {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured,
            "isError": False}, "ok"


def tools_call(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise p.RpcError(p.INVALID_PARAMS, "tools/call needs params.name, the tool to call")
    tool = active_registry().tool(name)
    if tool is None:
        raise p.RpcError(p.INVALID_PARAMS, f"Unknown tool: {name}. Call tools/list for the available tools.",
                         data={"name": name})
    started = time.perf_counter()
    result, outcome = _run_tool(call, tool, params.get("arguments"))
    if call.session is not None and not call.counted:
        mcp_session_seen(session=call.session, tool_call=True)
    log_op(logger, "mcp.tool", tool=name, durMs=round((time.perf_counter() - started) * 1000, 1),
           outcome=outcome, code=error_of(result)["code"] if result["isError"] else None,
           sessionPrefix=call.session.prefix if call.session else None)
    return result


def resources_list(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {"resources": [r.definition() for r in REGISTRY.resources()]}


def resources_templates_list(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {"resourceTemplates": []}


def resources_read(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise p.RpcError(p.INVALID_PARAMS, "resources/read needs params.uri")
    resource = REGISTRY.resource(uri)
    if resource is None:
        # Each era has its own not-found code; both carry the uri.
        code = p.INVALID_PARAMS if call.modern else p.LEGACY_RESOURCE_NOT_FOUND
        raise p.RpcError(code, f"Resource not found: {uri}. Call resources/list for the available ones.",
                         data={"uri": uri})
    return {"contents": [resource.read(call.principal)]}


def prompts_list(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {"prompts": []}  # no prompts yet: the capability is declared so clients may list (and cache) them


def prompts_get(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str) or not name:  # echoed back below: only a string (a NaN would break the JSON)
        raise p.RpcError(p.INVALID_PARAMS, "prompts/get needs params.name, the prompt to get")
    raise p.RpcError(p.INVALID_PARAMS, f"Prompt not found: {name}. Call prompts/list for the available ones.",
                     data={"name": name})


def ping(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {}


def discover(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {"supportedVersions": list(p.ALL_VERSIONS), "capabilities": p.capabilities(),
            "instructions": p.INSTRUCTIONS}


Handler = Callable[[Call, dict[str, Any]], dict[str, Any]]
COMMON: dict[str, Handler] = {
    "tools/list": tools_list,
    "tools/call": tools_call,
    "resources/list": resources_list,
    "resources/templates/list": resources_templates_list,
    "resources/read": resources_read,
    "prompts/list": prompts_list,
    "prompts/get": prompts_get,
}
LEGACY_METHODS: dict[str, Handler] = {**COMMON, "ping": ping}
MODERN_METHODS: dict[str, Handler] = {**COMMON, "server/discover": discover}


def dispatch(call: Call, method: str, params: Any) -> dict[str, Any]:
    """The result object of `method`, or raises RpcError. Stateless-era results get their envelope."""
    table = MODERN_METHODS if call.modern else LEGACY_METHODS
    handler = table.get(method)
    if handler is None:
        raise p.RpcError(p.METHOD_NOT_FOUND, f"Method not found: {method}", data={"method": method})
    args = _params(params)
    try:
        result = handler(call, args)
    except p.RpcError:
        raise
    except Exception as exc:  # a bug or an outage, not the caller's fault: -32603 with a ref, never a 500 page
        tool = args.get("name") if method == "tools/call" else None
        raise internal_error(exc, method=method, tool=tool if isinstance(tool, str) else None) from exc
    if call.modern:
        result["resultType"] = "complete"
        if method in p.CACHE_TTL_MS:
            result["ttlMs"] = p.CACHE_TTL_MS[method]
            result["cacheScope"] = "private"
        result["_meta"] = {p.SERVER_INFO_META_KEY: p.server_info()}
    return result
