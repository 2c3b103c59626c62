"""Staff admin over MCP sessions (read-mostly: the transport owns their lifecycle)."""

from django.contrib import admin

from mcpgw.models import McpSession


@admin.register(McpSession)
class McpSessionAdmin(admin.ModelAdmin):
    list_display = ("id", "token", "client_name", "protocol_version", "created_at", "last_seen_at",
                    "tool_call_count", "closed_at", "close_reason")
    list_filter = ("protocol_version", "close_reason")
    search_fields = ("=id", "client_name", "token__prefix", "token__user__email")
    raw_id_fields = ("token",)
    readonly_fields = ("id", "created_at", "last_seen_at", "tool_call_count")
