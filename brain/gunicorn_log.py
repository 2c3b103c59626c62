"""gunicorn's per-request overheads that are ours to choose: its access line and its workers' heartbeat file.

The logger leaves out the access line of MCP calls the app already logged.

Every answered POST to /mcp is logged by the MCP gateway as one structured line (`op=mcp.tool` with the tool, its
duration and outcome; `op=mcp.session.open`, `op=mcp.tools.list`), so gunicorn's combined-format access line for the
same request only repeats it, unstructured, at about a tenth of a millisecond per call: at 8 clients the two
cores served 15 % more `brain_list_projects` calls without it (docs/benchmarks.md, issue 17, tenth pass). Every
other request (pages, the REST API, health checks, and any /mcp answer that is not a 2xx) keeps its access line.
"""

from __future__ import annotations

import os
from typing import Any

from gunicorn.glogging import Logger

from brain.access_log import app_logged, secret_free

SHM = "/dev/shm"  # noqa: S108 - gunicorn makes its heartbeat file there with mkstemp (unique name, mode 0600)


def heartbeat_dir() -> str | None:
    """Where gunicorn's workers keep the file they touch after every request (their heartbeat): tmpfs where there
    is one, 0.08 ms less per MCP call here than on the data disk (docs/benchmarks.md, issue 17, tenth pass)."""
    return SHM if os.access(SHM, os.W_OK) else None


class AccessLogger(Logger):
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if app_logged(environ, getattr(resp, "status", None)):
            return
        shown = {**environ, **{key: secret_free(environ[key]) for key in ("PATH_INFO", "RAW_URI") if key in environ}}
        super().access(resp, req, shown, request_time)
