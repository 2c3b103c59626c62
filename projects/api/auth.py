"""API authentication: a bearer token for scripts, or the browser session (with CSRF) for the dashboard.

Both resolve to the same `Principal` the MCP gateway uses, so a project-scoped token sees exactly
what it sees over MCP.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from projects.models import User
from projects.scope import Principal
from projects.selectors.accounts import token_for_raw
from projects.services.accounts import token_touch


class BearerAuth(HttpBearer):
    """`Authorization: Bearer ebt_…`; unknown, revoked and expired tokens are refused the same way."""

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        api_token = token_for_raw(raw=token.strip())
        if api_token is None:
            return None
        token_touch(token=api_token)
        return Principal(user=api_token.user, token=api_token)


class SessionAuth(APIKeyCookie):
    """The signed-in browser session. Unsafe methods need the CSRF token (X-CSRFToken header)."""

    param_name: str = settings.SESSION_COOKIE_NAME

    def __init__(self) -> None:
        super().__init__(csrf=False)  # checked below, only once a session cookie is present

    def _get_key(self, request: HttpRequest) -> str | None:
        key = request.COOKIES.get(self.param_name)
        if key and not getattr(request, "_ninja_csrf_exempt", False) and check_csrf(request):
            raise HttpError(403, "CSRF check failed: send the csrftoken cookie's value in an X-CSRFToken header")
        return key

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = request.user
        if isinstance(user, User) and user.is_active:
            return Principal(user=user)
        return None


def principal_of(request: HttpRequest) -> Principal:
    """The caller; every authenticated operation has one (ninja stores it in `request.auth`)."""
    principal = getattr(request, "auth", None)
    assert isinstance(principal, Principal)
    return principal


API_AUTH = [BearerAuth(), SessionAuth()]
