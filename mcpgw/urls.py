from django.urls import path, re_path

from mcpgw.views import mcp_endpoint, not_an_endpoint

# Included at "mcp": the endpoint itself, then any other path under it ([\s\S] and \Z: a %0A in the path too).
urlpatterns = [path("", mcp_endpoint, name="mcp"), re_path(r"^/(?P<rest>[\s\S]*)\Z", not_an_endpoint)]
