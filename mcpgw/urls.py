from django.urls import path

from mcpgw.cognibrain.views import cognibrain_endpoint
from mcpgw.views import mcp_endpoint

# Full paths here (included at the root): `/mcp` has no trailing slash, so it cannot be an include prefix.
urlpatterns = [
    path("mcp", mcp_endpoint, name="mcp"),
    path("mcp/cognibrain", cognibrain_endpoint, name="mcp-cognibrain"),
]
