from django.contrib import admin
from django.urls import include, path

from brain import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    # Apps are included by dotted path: brain imports no app (see tests/brain/test_import_direction.py).
    path("api/v1/", include("projects.api.urls")),
    path("mcp/cognibrain", include("mcpgw.cognibrain.urls")),  # the Cognibrain tool profile
    path("mcp", include("mcpgw.urls")),
    path("mcp/", include("mcpgw.urls_unknown")),  # any other path under /mcp: a JSON-RPC 404, not an HTML page
    path("dashboard/", include("dashboard.urls")),
    path("settings/", include("dashboard.urls_settings")),
    path("", include("projects.urls")),
    path("", include("dashboard.urls_landing")),
]

# Errors Django answers itself (a Host outside ALLOWED_HOSTS, a refused user agent, a path no route serves, what
# escaped every handler) come in the format of the path's interface: JSON-RPC on /mcp, the error envelope under /api,
# JSON on the health routes, Django's pages elsewhere.
handler400 = "mcpgw.views.bad_request"
handler403 = "mcpgw.views.permission_denied"
handler404 = "mcpgw.views.page_not_found"
handler500 = "mcpgw.views.server_error"
