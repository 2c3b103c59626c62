"""Process health endpoints for load balancers and `brain serve`."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from brain.errors import RETRY_AFTER_SECONDS
from brain.health import readiness


@require_safe  # GET, and HEAD for probes that send it
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    checks = readiness()
    ready = all(ok for ok, _ in checks.values())
    body = {
        "status": "ok" if ready else "unavailable",
        "checks": {name: {"ok": ok, "detail": detail} for name, (ok, detail) in checks.items()},
    }
    response = JsonResponse(body, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
