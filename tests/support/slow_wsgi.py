"""A WSGI app whose one answer takes 3 s: a request still in flight when gunicorn gets SIGTERM."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    time.sleep(3)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"drained"]
