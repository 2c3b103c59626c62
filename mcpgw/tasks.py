"""Periodic jobs of the MCP gateway."""

from __future__ import annotations

from celery import shared_task

from mcpgw.services import mcp_sessions_late_bound_close, mcp_sessions_purge, mcp_sessions_sweep
from sessions.services.current import cognibrain_sessions_sweep


@shared_task(name="mcpgw.sweep_idle_sessions")
def sweep_idle_sessions() -> int:
    """Every 5 minutes (beat): close idle sessions, logging the orphans; delete long-closed ones."""
    closed = mcp_sessions_sweep()
    mcp_sessions_late_bound_close()  # Cognibrain sessions a call opened just after its MCP session closed
    mcp_sessions_purge()
    cognibrain_sessions_sweep()  # Cognibrain current sessions idle for 2 hours close as abandoned
    return closed
