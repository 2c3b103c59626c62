from django.apps import AppConfig


class McpgwConfig(AppConfig):
    name = "mcpgw"
    verbose_name = "MCP gateway"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers every tool and resource with mcpgw.registry.REGISTRY.
        from mcpgw import tools  # noqa: F401
