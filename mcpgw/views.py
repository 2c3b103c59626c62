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
from projects.api.errors import HTTP_CODES, envelope

HEALTH_PATHS = ("/healthz", "/readyz")
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
        raw = bearer_raw(request)
        if era_modern.applies(request, message):
            return era_modern.handle(request, usable_token(request, raw), message)
        # The handshake era authenticates itself: a tools/call reads token and session in one round trip.
        return era_legacy.handle(request, raw, message)
    except p.RpcError as exc:  # a refusal (rate, token, session) the caller can match to its request by its id
        return rpc_error_response(exc, p.request_id(message))


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


def _own_format(request: HttpRequest, exception: Exception | None, status: int, message: str,
                page: Callable[..., HttpResponse]) -> HttpResponse:
    """An error handler's answer in the format of the interface the path belongs to: a JSON-RPC error on /mcp, the
    API's envelope under /api, JSON on the health routes, and Django's own `page` for the pages people read."""
    path = request.path
    if path.startswith("/mcp"):
        code = p.INTERNAL_ERROR if status >= 500 else p.INVALID_REQUEST
        return rpc_error_response(p.RpcError(code, message, status=status))
    if path == "/api" or path.startswith("/api/"):
        return envelope(status, "INTERNAL" if status >= 500 else HTTP_CODES.get(status, "ERROR"), message)
    if path.rstrip("/") in HEALTH_PATHS:
        return JsonResponse({"status": "error", "error": message}, status=status)
    return page(request, exception) if exception is not None else page(request)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400, e.g. a Host header outside ALLOWED_HOSTS."""
    return _own_format(request, exception or Exception(), 400, "Bad Request: this Host is not allowed",
                       defaults.bad_request)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403, e.g. a user agent in DISALLOWED_USER_AGENTS."""
    return _own_format(request, exception or Exception(), 403, "Forbidden: this client is not allowed here",
                       defaults.permission_denied)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: a path no route serves (/api/v2/..., /healthz/); /mcp/... and /api/v1/... have their own."""
    message = (f"Not Found: nothing is served at {request.path}; the REST API is under /api/v1/ (see /api/v1/docs), "
               "the health checks are /healthz and /readyz, without a trailing slash")
    return _own_format(request, exception or Exception(), 404, message, defaults.page_not_found)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: what escaped every handler of the interface (its own catch-all logs and answers the rest)."""
    return _own_format(request, None, 500, "Internal error: the server failed on this request; it has been logged",
                       defaults.server_error)
