"""The REST API (django-ninja) under /api/v1.

Other apps add their resources with `api.add_router("/knowledge", router)` from their
AppConfig.ready(), reusing the auth, error envelope and pagination of this package.
"""

from __future__ import annotations

from ninja import NinjaAPI

from projects.api.auth import API_AUTH
from projects.api.errors import install_error_handlers
from projects.api.routes_projects import router as projects_router
from projects.api.routes_tokens import router as tokens_router

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
api.add_router("/projects", projects_router)
api.add_router("/tokens", tokens_router)
