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

# A Host outside ALLOWED_HOSTS or a refused user agent gets a JSON-RPC error on /mcp (Django's page elsewhere).
handler400 = "mcpgw.views.bad_request"
handler403 = "mcpgw.views.permission_denied"
