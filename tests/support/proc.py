"""Helpers for tests that run the `brain` command line as a real subprocess."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from django.db import connection

BRAIN = shutil.which("brain", path=str(Path(sys.executable).parent)) or "brain"


def database_url_for_children() -> str:
    """The URL of the database this test run uses (the test_ database), for child processes."""
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or ""
    if host.startswith("/"):
        return f"postgres://{user}{password}@/{db['NAME']}?host={quote(host)}"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{user}{password}@{host}{port}/{db['NAME']}"


def run_brain(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([BRAIN, *args], env=full_env, capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def database_at(port: int) -> Iterator[None]:
    """Django's connection pointed at 127.0.0.1:`port` for the block (a closed port: the database is down)."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update({"HOST": "127.0.0.1", "PORT": str(port)})
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
