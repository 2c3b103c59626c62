"""Content-Security-Policy for every HTML page (landing, dashboard, settings, accounts, admin).

Scripts run only from our origin or inline with this response's nonce (`<script nonce="{{ csp_nonce }}">`),
so text that slipped into a page as markup cannot run. Styles allow inline `style` attributes, which the
pages and the admin use for layout and which cannot carry a nonce. Pages may not be framed. The API's
interactive docs (/api/v1/docs) load Swagger UI from a CDN and are left without a policy.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"
EXEMPT_PREFIXES = ("/api/v1/docs",)


def policy(nonce: str) -> str:
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self' 'nonce-{nonce}'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ])


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = secrets.token_urlsafe(16)
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        response = self.get_response(request)
        html = response.get("Content-Type", "").startswith("text/html")
        if html and HEADER not in response and not request.path.startswith(EXEMPT_PREFIXES):
            response[HEADER] = policy(nonce)
        return response


def nonce(request: HttpRequest) -> dict[str, str]:
    """Template context processor: `csp_nonce` for the pages' inline scripts."""
    return {"csp_nonce": getattr(request, "csp_nonce", "")}
