from django.urls import path

from mcpgw.cognibrain.views import cognibrain_endpoint
from mcpgw.views import mcp_endpoint

urlpatterns = [path("", mcp_endpoint, name="mcp"), path("/cognibrain", cognibrain_endpoint, name="mcp-cognibrain")]
