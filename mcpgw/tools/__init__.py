"""Every MCP tool module; importing this package registers them all (done in McpgwConfig.ready)."""

from mcpgw.tools import brain_knowledge, brain_sessions, projects, resources_user  # noqa: F401
