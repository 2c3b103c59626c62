"""A WSGI app answering every request with the status its `status` query parameter names (default 200)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

REASONS = {"200": "OK", "202": "Accepted", "401": "Unauthorized"}


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    status = parse_qs(environ.get("QUERY_STRING", "")).get("status", ["200"])[0]
    start_response(f"{status} {REASONS.get(status, 'Status')}", [("Content-Type", "text/plain")])
    return [status.encode()]
