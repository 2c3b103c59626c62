"""URLs of /api/v1. Two answers ninja gives outside its exception handlers are wrapped here so they
use the error envelope too: 405 for a method a path lacks, and 404 for a path that does not exist."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.urls import URLPattern, URLResolver, re_path
from django.views.decorators.csrf import csrf_exempt

from projects.api import api

View = Callable[..., HttpResponseBase]


def _envelope(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "details": {}}}, status=status)


def _json_405(view: View) -> View:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and "json" not in response.get("Content-Type", ""):
            allowed = response.get("Allow", "")
            replaced = _envelope(405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed here; use {allowed}")
            replaced["Allow"] = allowed
            return replaced
        return response

    return csrf_exempt(wrapped)


@csrf_exempt
def not_found(request: HttpRequest, path: str) -> JsonResponse:
    return _envelope(404, "NOT_FOUND", f"no API endpoint at /api/v1/{path}; see /api/v1/docs")


def _wrapped(patterns: list[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    out: list[URLPattern | URLResolver] = []
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = _json_405(pattern.callback)
        out.append(pattern)
    return out


_patterns, _app_name, app_name = api.urls  # ninja reverses its own views under its namespace
urlpatterns = [*_wrapped(list(_patterns)), re_path(r"^(?P<path>.*)$", not_found)]
