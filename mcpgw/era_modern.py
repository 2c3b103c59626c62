"""The stateless 2026-07-28 era: every request carries its version and capabilities in `_meta`, and
the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers must agree with the body."""

from __future__ import annotations

import base64
import binascii
import logging
import re
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from mcpgw import protocol as p
from mcpgw.dispatch import Call, dispatch
from projects.models import ApiToken
from projects.scope import Principal

logger = logging.getLogger("mcpgw")
_BASE64_SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def _meta_of(message: dict[str, Any]) -> Any:
    params = message.get("params")
    return params.get("_meta") if isinstance(params, dict) else None


def applies(request: HttpRequest, message: dict[str, Any]) -> bool:
    """Stateless era when the version header names it, or (header absent) the body uses its envelope."""
    version = request.headers.get(p.VERSION_HEADER)
    if version is not None and version.strip() in p.MODERN_VERSIONS:
        return True
    meta = _meta_of(message)
    envelope = isinstance(meta, dict) and p.PROTOCOL_VERSION_META_KEY in meta
    return message.get("method") == "server/discover" or envelope


def _header(request: HttpRequest, name: str) -> str | None:
    value = request.headers.get(name)
    return value.strip() if value is not None else None  # RFC 9110: surrounding whitespace is not content


def _decoded(value: str | None) -> str | None:
    """Mcp-Name values that are not plain ASCII arrive as =?base64?...?=; a malformed one matches nothing."""
    if value is None or not (match := _BASE64_SENTINEL.fullmatch(value)):
        return value
    try:
        raw = base64.b64decode(match["payload"], validate=True)
        return raw.decode() if base64.b64encode(raw).decode() == match["payload"] else None
    except (binascii.Error, UnicodeDecodeError):
        return None


def _mismatch(what: str) -> p.RpcError:
    return p.RpcError(p.HEADER_MISMATCH, f"Header mismatch: {what}", status=400)


def _check_envelope(request: HttpRequest, message: dict[str, Any]) -> str:
    """The version of a well-formed request, or the spec's error: -32602, -32020 or -32022."""
    meta = _meta_of(message)
    required = (p.PROTOCOL_VERSION_META_KEY, p.CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(meta, dict):
        raise p.RpcError(p.INVALID_PARAMS, f"params._meta must be an object carrying {' and '.join(required)}",
                         status=400)
    if missing := [key for key in required if key not in meta]:
        raise p.RpcError(p.INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}", status=400)
    version = meta[p.PROTOCOL_VERSION_META_KEY]
    if _header(request, p.VERSION_HEADER) != version:
        raise _mismatch(f"{p.VERSION_HEADER} must equal params._meta protocol version {version!r}")
    method = message.get("method")
    if _header(request, p.METHOD_HEADER) != method:
        raise _mismatch(f"{p.METHOD_HEADER} must equal the body's method {method!r}")
    name_key = p.NAME_BEARING.get(str(method))
    body_name = message["params"].get(name_key) if name_key else None
    if body_name is not None and _decoded(_header(request, p.NAME_HEADER)) != body_name:
        raise _mismatch(f"{p.NAME_HEADER} must equal params.{name_key}")
    if not isinstance(version, str):
        raise p.RpcError(p.INVALID_PARAMS, "the protocol version in params._meta must be a string", status=400)
    if version not in p.MODERN_VERSIONS:
        raise p.RpcError(p.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", status=400,
                         data={"supported": list(p.MODERN_VERSIONS), "requested": version})
    return version


def _notification(request: HttpRequest) -> HttpResponse:
    version = _header(request, p.VERSION_HEADER)
    if version not in p.MODERN_VERSIONS:
        raise p.RpcError(p.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", status=400,
                         data={"supported": list(p.MODERN_VERSIONS), "requested": version})
    return HttpResponse(status=202)  # this revision defines no client notifications: acknowledged, dropped


def handle(request: HttpRequest, token: ApiToken, message: dict[str, Any]) -> HttpResponse:
    if "id" not in message:
        if not isinstance(message.get("method"), str):
            raise p.RpcError(p.INVALID_REQUEST, "Invalid Request: not a JSON-RPC message", status=400)
        return _notification(request)
    request_id = p.request_id(message)
    if message.get("jsonrpc") != "2.0" or request_id is None or not isinstance(message.get("method"), str):
        raise p.RpcError(p.INVALID_REQUEST, "Invalid Request: need jsonrpc \"2.0\", a string or integer id "
                         "and a method", status=400)
    try:
        version = _check_envelope(request, message)
        call = Call(principal=Principal(user=token.user, token=token), modern=True, version=version)
        result = dispatch(call, message["method"], message.get("params"))
    except p.RpcError as exc:
        return JsonResponse(exc.body(request_id), status=p.MODERN_ERROR_STATUS.get(exc.code, exc.status))
    return JsonResponse({"jsonrpc": "2.0", "id": request_id, "result": result})
