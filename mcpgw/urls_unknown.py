from django.urls import re_path

from mcpgw.views import not_an_endpoint

# Included at "mcp/", after the two endpoints: any other path under /mcp ([\s\S] and \Z: a %0A in the path too).
urlpatterns = [re_path(r"^(?P<rest>[\s\S]*)\Z", not_an_endpoint)]
