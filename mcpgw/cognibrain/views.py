"""POST/DELETE /mcp/cognibrain: the /mcp transport (tokens, eras, Origin, size limits, logs) with the
Cognibrain tool set."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from brain.lean_wsgi import lean
from mcpgw.cognibrain import tools  # noqa: F401  (registers the nine tools)
from mcpgw.cognibrain.registry import COGNIBRAIN
from mcpgw.profile import profile
from mcpgw.views import mcp_endpoint


@lean
@csrf_exempt
def cognibrain_endpoint(request: HttpRequest) -> HttpResponse:
    with profile(COGNIBRAIN):
        return mcp_endpoint(request)  # type: ignore[no-any-return]
