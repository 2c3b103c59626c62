"""Who is calling, and may they use this session? Every request carries its bearer token."""

from __future__ import annotations

import hmac
import logging
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest

from brain.logs import log_op
from mcpgw import protocol as p
from mcpgw.models import McpSession
from mcpgw.selectors import mcp_session_live
from mcpgw.services import mcp_session_seen
from mcpgw.session_call import CountedCall, Listing, session_tool_call
from projects.models import ApiToken
from projects.selectors.accounts import token_for_raw
from projects.services.accounts import token_touch

logger = logging.getLogger("mcpgw")
LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


def origin_allowed(request: HttpRequest) -> bool:
    """Browsers send Origin; a page on another site must not drive a local brain (DNS rebinding)."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser: agents and CLIs send no Origin
    origin = origin.strip().rstrip("/")
    if origin in {o.rstrip("/") for o in settings.MCP_ALLOWED_ORIGINS}:
        return True
    if origin == settings.PUBLIC_URL.rstrip("/"):
        return True
    try:
        host = urlsplit(origin).hostname
    except ValueError:  # e.g. "http://[": not an origin any browser sends, so not an allowed one
        return False
    return host is not None and host.lower() in LOOPBACK


def bearer_raw(request: HttpRequest) -> str:
    """The raw bearer value of this request (not yet checked against the database), or RpcError 401."""
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        log_op(logger, "mcp.unauth", reason="missing", method=request.method)
        raise p.RpcError(p.SESSION_ERROR, "Unauthorized: send Authorization: Bearer <token> "
                         "(mint one with `brain token create` or in Settings > Tokens)", status=401)
    return raw.strip()


def usable_token(request: HttpRequest, raw: str) -> ApiToken:
    """The usable token for a raw bearer value, or RpcError 401 (unknown, revoked, expired)."""
    token = token_for_raw(raw=raw)
    if token is None:
        log_op(logger, "mcp.unauth", reason="invalid", method=request.method)
        raise p.RpcError(p.SESSION_ERROR, "Unauthorized: this token is unknown, revoked or expired; "
                         "mint a new one", status=401)
    token_touch(token=token)
    return token


def bearer_token(request: HttpRequest) -> ApiToken:
    """The usable token of this request, or RpcError 401 (missing, unknown, revoked, expired)."""
    return usable_token(request, bearer_raw(request))


def bound_session(request: HttpRequest, token: ApiToken) -> McpSession:
    """The live session named by Mcp-Session-Id, opened by this very token."""
    session_id = request.headers.get(p.SESSION_HEADER, "").strip()
    if not session_id:
        raise p.RpcError(p.INVALID_REQUEST, f"Bad Request: the {p.SESSION_HEADER} header is required; "
                         "send initialize first to open a session", status=400)
    session = mcp_session_live(session_id=session_id)
    if session is None:
        raise p.RpcError(p.SESSION_ERROR, "Session not found: it was closed or expired; send initialize "
                         "to open a new one", status=404)
    if not hmac.compare_digest(str(session.token_id).encode(), str(token.pk).encode()):
        log_op(logger, "mcp.session.token_mismatch", sessionPrefix=session.prefix)
        raise p.RpcError(p.SESSION_ERROR, "Session-token mismatch", status=401)
    return session


def tool_call_session(request: HttpRequest, raw: str, *, listing: Listing = "") -> CountedCall:
    """The bound session of a tools/call (`.token` loaded), the call counted (and the visible projects when asked
    and the one round trip served): one round trip when all is well, else the step-by-step checks that give the
    precise error (nothing was counted then)."""
    counted = session_tool_call(raw_token=raw, session_id=request.headers.get(p.SESSION_HEADER, "").strip(),
                                listing=listing)
    if counted is None:
        token = usable_token(request, raw)
        session = bound_session(request, token)
        session.token = token  # the very token bound_session checked: no second read of it
        mcp_session_seen(session=session, tool_call=True)  # only after a race with a close or an expiry
        return CountedCall(session)
    token_touch(token=counted.session.token)
    return counted
