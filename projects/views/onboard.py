"""/api/onboard.sh and /api/onboard.ps1: the installers, templated with this server's URL only."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.views.decorators.http import require_GET

from projects.views.tokens import public_base_url

SCRIPTS = Path(__file__).resolve().parents[1] / "onboard"
PLACEHOLDER = "__BRAIN_URL__"
# The URL lands inside a quoted shell string: allow only characters that cannot end or escape it.
SAFE_URL = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?$")


@cache
def _template(name: str) -> str:
    return (SCRIPTS / name).read_text()


def render_script(name: str, base_url: str) -> str:
    if not SAFE_URL.match(base_url):
        raise ValueError(f"server URL {base_url!r} has characters a script cannot carry safely")
    return _template(name).replace(PLACEHOLDER, base_url)


def _serve(request: HttpRequest, name: str, content_type: str) -> HttpResponse:
    try:
        body = render_script(name, public_base_url(request))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain")
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def onboard_sh(request: HttpRequest) -> HttpResponse:
    return _serve(request, "onboard.sh", "text/x-shellscript")


@require_GET
def onboard_ps1(request: HttpRequest) -> HttpResponse:
    return _serve(request, "onboard.ps1", "text/plain")
