from django.urls import path

from mcpgw.cognibrain.views import cognibrain_endpoint

urlpatterns = [path("", cognibrain_endpoint, name="mcp-cognibrain")]
