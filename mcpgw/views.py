"""POST/DELETE /mcp: the Streamable HTTP endpoint of both MCP eras, JSON responses only."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from brain.addresses import client_address
from brain.lean_wsgi import lean
from brain.ratelimit import rate_limit_hit
from mcpgw import era_legacy, era_modern
from mcpgw import protocol as p
from mcpgw.auth import bearer_raw, bearer_token, bound_session, origin_allowed, usable_token
from mcpgw.dispatch import internal_error
from mcpgw.services import mcp_session_close

logger = logging.getLogger("mcpgw")


def rpc_error_response(exc: p.RpcError, request_id: Any = None) -> JsonResponse:
    response = JsonResponse(exc.body(request_id), status=exc.status)
    if exc.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="External Brain"'
    if exc.status in (429, 503) and isinstance(exc.data, dict) and "retryAfterSeconds" in exc.data:
        response["Retry-After"] = str(exc.data["retryAfterSeconds"])
    return response


def _read_body(request: HttpRequest) -> bytes:
    cap = settings.MCP_MAX_BODY_BYTES
    too_big = p.RpcError(p.INVALID_REQUEST, f"Request body is larger than {cap} bytes", status=413)
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > cap:
        raise too_big
    body = request.read(cap + 1)
    if len(body) > cap:
        raise too_big
    return body


def _decode(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        raise p.RpcError(p.PARSE_ERROR, "Parse error: the body is not valid JSON", status=400) from None
    if isinstance(message, list):
        raise p.RpcError(p.INVALID_REQUEST, "Batches are not supported: send one JSON-RPC message per request",
                         status=400)
    if not isinstance(message, dict):
        raise p.RpcError(p.INVALID_REQUEST, "The body must be one JSON-RPC object", status=400)
    return message


def _rate_limit(request: HttpRequest) -> None:
    """RpcError 429 when this token or client address is over its request rate (brain/ratelimit.py)."""
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    credential = raw.strip() if scheme.lower() == "bearer" else ""
    limited = rate_limit_hit(credential=credential or None, address=client_address(request), path=request.path)
    if limited is not None:
        raise p.RpcError(p.RATE_LIMITED, limited.message, status=429, data=limited.details())


def _delete(request: HttpRequest) -> HttpResponse:
    _rate_limit(request)
    token = bearer_token(request)
    session = bound_session(request, token)
    mcp_session_close(session=session)
    return JsonResponse({"closed": True})


def _post(request: HttpRequest) -> HttpResponse:
    try:
        message = _decode(_read_body(request))
    except p.RpcError:
        _rate_limit(request)  # counted too: a flood of broken bodies is still a flood
        usable_token(request, bearer_raw(request))  # a bad token answers 401 before a bad body is looked at
        raise
    try:
        _rate_limit(request)
    except p.RpcError as exc:
        return rpc_error_response(exc, message.get("id"))  # the caller can match the refusal to its request
    raw = bearer_raw(request)
    if era_modern.applies(request, message):
        return era_modern.handle(request, usable_token(request, raw), message)
    # The handshake era authenticates itself: a tools/call reads token and session in one round trip.
    return era_legacy.handle(request, raw, message)


@lean
@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    try:
        if not origin_allowed(request):
            raise p.RpcError(p.INVALID_REQUEST, "Forbidden: this Origin is not allowed; add it to "
                             "BRAIN_MCP_ALLOWED_ORIGINS", status=403)
        if request.method == "POST":
            return _post(request)
        if request.method == "DELETE":
            return _delete(request)
        response = rpc_error_response(p.RpcError(
            p.INVALID_REQUEST, "Method Not Allowed: POST JSON-RPC messages here (DELETE ends a session)",
            status=405))
        response["Allow"] = "POST, DELETE"
        return response
    except p.RpcError as exc:
        return rpc_error_response(exc)
    except Exception as exc:  # outside a method (reading, decoding, authenticating): JSON-RPC, never HTML
        return rpc_error_response(internal_error(exc, http=request.method, path=request.path))


@csrf_exempt
def not_an_endpoint(request: HttpRequest, rest: str) -> HttpResponse:
    """Any other path under /mcp (a trailing slash, a typo): a JSON-RPC 404 that names the endpoints, not
    Django's HTML page, which an MCP client could only report as an unreadable answer."""
    try:
        _rate_limit(request)
    except p.RpcError as exc:
        return rpc_error_response(exc)
    return rpc_error_response(p.RpcError(
        p.INVALID_REQUEST, f"Not Found: {request.path} is not an MCP endpoint; connect to /mcp (or /mcp/cognibrain "
        "for the Cognibrain tools), exactly as written, without a trailing slash", status=404))


def _json_on_mcp(request: HttpRequest, exception: Exception | None, status: int, message: str,
                 page: Callable[[HttpRequest, Exception], HttpResponse]) -> HttpResponse:
    """An error handler's answer: a JSON-RPC error on /mcp, Django's own `page` elsewhere."""
    if request.path.startswith("/mcp"):
        return rpc_error_response(p.RpcError(p.INVALID_REQUEST, message, status=status))
    return page(request, exception or Exception())


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: JSON for /mcp (e.g. a Host header outside ALLOWED_HOSTS), Django's page elsewhere."""
    return _json_on_mcp(request, exception, 400, "Bad Request: this Host is not allowed", defaults.bad_request)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403: JSON for /mcp (e.g. a user agent in DISALLOWED_USER_AGENTS), Django's page elsewhere."""
    return _json_on_mcp(request, exception, 403, "Forbidden: this client is not allowed here",
                        defaults.permission_denied)
