"""Every MCP tool module; importing this package registers them all (done in McpgwConfig.ready)."""

from mcpgw.tools import projects  # noqa: F401
