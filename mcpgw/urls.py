from django.urls import path

from mcpgw.views import mcp_endpoint

urlpatterns = [path("", mcp_endpoint, name="mcp")]
