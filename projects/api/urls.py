"""URLs of /api/v1: the API object and its one router table. Routers of apps above `projects` are named
by dotted path (as `brain.urls` includes apps), so the import direction stays one way. Two answers ninja
gives outside its exception handlers are wrapped so they use the error envelope too: 405 for a method a
path lacks, and 404 for a path that does not exist."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.urls import URLPattern, URLResolver, re_path
from django.utils.module_loading import import_string
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI

from brain.addresses import client_address
from brain.ratelimit import rate_limit_hit
from projects.api.auth import API_AUTH
from projects.api.errors import envelope, install_error_handlers
from projects.api.idempotency import idempotent_view

api = NinjaAPI(
    title="External Brain API",
    version="1",
    description=(
        "Scripts authenticate with `Authorization: Bearer <token>` (mint one at /settings/tokens); the "
        "dashboard uses its session cookie plus an X-CSRFToken header. A project-scoped token sees only its "
        "project, exactly as over MCP. Errors are `{\"error\": {\"code\", \"message\", \"details\"}}`; lists "
        "are `{\"items\", \"nextCursor\"}`: pass nextCursor back as `cursor` for the next page."
    ),
    auth=API_AUTH,
    urls_namespace="api-v1",
    docs_url="/docs",
)
install_error_handlers(api)

# (path prefix, dotted path of a ninja Router), in the order the docs list them.
ROUTERS: list[tuple[str, str]] = [
    ("/projects", "projects.api.projects.router"),
    ("/tokens", "projects.api.tokens.router"),
    ("/orgs", "projects.api.orgs.router"),
    ("/knowledge", "knowledge.api.knowledge.router"),
    ("/action-items", "knowledge.api.user.actions_router"),
    ("/peer-card", "knowledge.api.user.peer_router"),
    ("/sessions", "sessions.api.sessions.router"),
    ("/export", "sessions.api.export.router"),
    ("/import", "knowledge.api.imports.router"),
]
for prefix, dotted in ROUTERS:
    api.add_router(prefix, import_string(dotted))

View = Callable[..., HttpResponseBase]


def _json_405(view: View) -> View:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and "json" not in response.get("Content-Type", ""):
            allowed = response.get("Allow", "")
            replaced = envelope(405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed here; use {allowed}")
            replaced["Allow"] = allowed
            return replaced
        return response

    return csrf_exempt(wrapped)


def _rate_limited(view: View) -> View:
    """Refuses (429, RATE_LIMITED, Retry-After) a request over its token's, session's or address's rate."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
        credential = raw.strip() if scheme.lower() == "bearer" else request.COOKIES.get(settings.SESSION_COOKIE_NAME)
        limited = rate_limit_hit(credential=credential or None, address=client_address(request), path=request.path)
        if limited is None:
            return view(request, *args, **kwargs)
        response = envelope(429, "RATE_LIMITED", limited.message, limited.details())
        response["Retry-After"] = str(limited.retry_after_s)
        return response

    return csrf_exempt(wrapped)


@csrf_exempt
def not_found(request: HttpRequest, path: str) -> JsonResponse:
    return envelope(404, "NOT_FOUND", f"no API endpoint at /api/v1/{path}; see /api/v1/docs")


def _root(request: HttpRequest, **kwargs: Any) -> JsonResponse:
    """/api/v1/ itself answers as an unknown path does: ninja's root view raised Http404, Django's HTML page."""
    return not_found(request, "")


def _wrapped(patterns: list[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    out: list[URLPattern | URLResolver] = []
    for pattern in patterns:
        if isinstance(pattern, URLPattern) and pattern.name == "api-root":  # kept by name: the schema reverses it
            pattern.callback = _root
        if isinstance(pattern, URLPattern):
            pattern.callback = _rate_limited(_json_405(idempotent_view(pattern.callback)))
        out.append(pattern)
    return out


_patterns, _app_name, app_name = api.urls  # ninja reverses its own views under its namespace
# [\s\S] and \Z, not . and $: a path with a newline (%0A) must land here too, not on Django's HTML 404.
urlpatterns = [*_wrapped(list(_patterns)), re_path(r"^(?P<path>[\s\S]*)\Z", _rate_limited(not_found))]
