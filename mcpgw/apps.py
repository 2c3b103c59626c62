from django.apps import AppConfig


class McpgwConfig(AppConfig):
    name = "mcpgw"
    verbose_name = "MCP gateway"
    default_auto_field = "django.db.models.BigAutoField"
