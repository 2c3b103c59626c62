"""The access line of `brain serve`'s web server, written by the application: one structured line per request.

granian (the server `brain serve` runs, brain/serve.py) has an access log of its own, but it cannot leave out
the requests the app already logs and is not in our log format. Every answered POST to /mcp is logged by the MCP
gateway as one structured line (`op=mcp.tool` with the tool, its duration and outcome; `op=mcp.session.open`,
`op=mcp.tools.list`), so its access line would only repeat it; every other request (pages, the REST API, health
checks, and any /mcp answer that is not a 2xx) gets `op=http.access` with method, path, status and the time to
the answer's first byte. Web replicas run gunicorn, whose own access logger applies the same rule
(brain/gunicorn_log.py).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from brain.body_guard import StartResponse, WsgiApp
from brain.logs import log_op

logger = logging.getLogger("brain.http")
MCP_PATH = "/mcp"
# Paths that carry a secret (a password reset's or a sign-up check's token, an invitation's key): whoever reads the
# log could use it, so the access line shows the route with the secret replaced.
SECRET_SEGMENTS = (re.compile(r"(/password/reset/[^/]+/)(?!set-password/)[^/?]+"),
                   re.compile(r"(/signup/verify/[^/]+/)[^/?]+"),
                   re.compile(r"^(/invitations/)[^/?]+"))


def secret_free(path: str) -> str:
    """`path` with the secret part of a reset, sign-up check or invitation link replaced by `***`."""
    for pattern in SECRET_SEGMENTS:
        path = pattern.sub(r"\1***", path)
    return path


def app_logged(environ: dict[str, Any], status: str | int | None) -> bool:
    """A POST to /mcp answered 2xx: the gateway logged it already."""
    code = str(status or "")[:3]
    return environ.get("REQUEST_METHOD") == "POST" and environ.get("PATH_INFO") == MCP_PATH and code.startswith("2")


def access_logged(app: WsgiApp) -> WsgiApp:
    """Wraps a WSGI application so each request it answers leaves one `op=http.access` line (see the module)."""

    def logged(environ: dict[str, Any], start_response: StartResponse) -> Any:
        started = time.perf_counter()

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if not app_logged(environ, status):
                log_op(logger, "http.access", method=environ.get("REQUEST_METHOD", ""),
                       path=secret_free(environ.get("PATH_INFO", "")), status=int(status[:3]),
                       ms=round((time.perf_counter() - started) * 1000, 2))
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        return app(environ, start)

    return logged
