"""The handshake era (2025-03-26 / 2025-06-18 / 2025-11-25): initialize, Mcp-Session-Id, ping."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from brain.errors import ValidationFailed
from mcpgw import protocol as p
from mcpgw.auth import bound_session, tool_call_session, usable_token
from mcpgw.dispatch import Call, dispatch
from mcpgw.services import mcp_session_open, mcp_session_seen
from mcpgw.session_call import LISTS_PROJECTS, OPENS_IN_FIRST_PROJECT, CountedCall, Listing
from projects.models import ApiToken
from projects.scope import Principal

logger = logging.getLogger("mcpgw")


def _version_ok(request: HttpRequest) -> bool:
    version = request.headers.get(p.VERSION_HEADER)
    return version is None or version.strip() in p.LEGACY_VERSIONS


def _check_version_header(request: HttpRequest) -> None:
    version = request.headers.get(p.VERSION_HEADER)
    if version is not None and version.strip() not in p.LEGACY_VERSIONS:
        raise p.RpcError(p.INVALID_REQUEST, f"Bad Request: unsupported {p.VERSION_HEADER} {version.strip()!r}; "
                         f"supported: {', '.join(p.ALL_VERSIONS)}", status=400)


def _initialize(token: ApiToken, request_id: Any, params: Any) -> HttpResponse:
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        raise p.RpcError(p.INVALID_PARAMS, "initialize needs params.protocolVersion", status=400)
    requested = params["protocolVersion"]
    version = requested if requested in p.LEGACY_VERSIONS else p.LATEST_LEGACY
    client_info = params.get("clientInfo")
    client = client_info if isinstance(client_info, dict) else {}
    try:
        session = mcp_session_open(token=token, protocol_version=version, client_name=str(client.get("name", "")),
                                   client_version=str(client.get("version", "")))
    except ValidationFailed as exc:
        raise p.RpcError(p.INVALID_PARAMS, f"initialize: params.{exc.message}", status=400) from None
    result = {"protocolVersion": version, "capabilities": p.capabilities(), "serverInfo": p.server_info(),
              "instructions": p.INSTRUCTIONS}
    response = JsonResponse({"jsonrpc": "2.0", "id": request_id, "result": result})
    response[p.SESSION_HEADER] = session.id
    return response


def _valid_id(message: dict[str, Any]) -> bool:
    return p.request_id(message) is not None


def _listing(message: dict[str, Any]) -> Listing:
    """What the call's authentication reads of the visible projects: all of them for a tool that lists them, the
    first for a session opened without a named project (it lands there), else nothing."""
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if not isinstance(name, str):  # any JSON may arrive as the name
        return ""
    if name in LISTS_PROJECTS:
        return "all"
    arguments = params.get("arguments") if isinstance(params, dict) else None
    named = isinstance(arguments, dict) and any(arguments.get(key) for key in ("projectId", "projectName"))
    return "first" if name in OPENS_IN_FIRST_PROJECT and not named else ""


def _authenticated(request: HttpRequest, raw: str, message: dict[str, Any]) -> tuple[CountedCall, bool]:
    """The caller's bound session (`.token` loaded) and whether the tools/call was counted with it. A well-formed
    tools/call goes the one round-trip way (which also reads the visible projects for a tool that only lists
    them, and the first of them for a session opened in it, `_listing`); anything else reads the token, then the
    session."""
    if message.get("method") == "tools/call" and _valid_id(message) and _version_ok(request):
        return tool_call_session(request, raw, listing=_listing(message)), True
    token = usable_token(request, raw)
    session = bound_session(request, token)
    session.token = token
    return CountedCall(session), False


def handle(request: HttpRequest, raw: str, message: dict[str, Any]) -> HttpResponse:
    method = message.get("method")
    is_request = "id" in message
    if method == "initialize":  # sent without an id it is still the handshake, not a notification of a session
        token = usable_token(request, raw)
        _check_version_header(request)
        if not is_request or not _valid_id(message):
            raise p.RpcError(p.INVALID_REQUEST, "initialize needs a string or integer id", status=400)
        return _initialize(token, message["id"], message.get("params"))
    caller, counted = _authenticated(request, raw, message)
    session, token = caller.session, caller.session.token
    _check_version_header(request)
    if not is_request or not isinstance(method, str):
        # Notifications (initialized, cancelled, ...) and replies to server requests: accepted, nothing to say.
        if not isinstance(method, str) and "result" not in message and "error" not in message:
            raise p.RpcError(p.INVALID_REQUEST, "Invalid Request: not a JSON-RPC message", status=400)
        mcp_session_seen(session=session)
        return HttpResponse(status=202)
    if not _valid_id(message):
        raise p.RpcError(p.INVALID_REQUEST, "Invalid Request: id must be a string or integer", status=400)
    if not counted:
        mcp_session_seen(session=session)
    principal = Principal(user=token.user, token=token, binding=session.binding,
                          listed=caller.listed if caller.listing == "all" else None,
                          listed_first=caller.listed if caller.listing == "first" else None)
    call = Call(principal=principal, modern=False, version=session.protocol_version,
                session=session, counted=counted)
    try:
        result = dispatch(call, method, message.get("params"))
    except p.RpcError as exc:
        return JsonResponse(exc.body(message["id"]), status=200 if exc.status == 200 else exc.status)
    return JsonResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})
