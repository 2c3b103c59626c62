"""Periodic jobs of the MCP gateway."""

from __future__ import annotations

from celery import shared_task

from mcpgw.services import mcp_sessions_sweep


@shared_task(name="mcpgw.sweep_idle_sessions")
def sweep_idle_sessions() -> int:
    """Every 5 minutes (beat): close idle sessions, logging the orphans."""
    return mcp_sessions_sweep()
