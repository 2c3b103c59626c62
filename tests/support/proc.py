"""Helpers for tests that run the `brain` command line as a real subprocess."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from brain.bench.mcp_load import free_port  # noqa: F401 - the tests take it from here
from brain.serve import web_server_args

BRAIN = shutil.which("brain", path=str(Path(sys.executable).parent)) or "brain"


def run_brain(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([BRAIN, *args], env=full_env, capture_output=True, text=True, timeout=timeout)


def web_server_argv(server: str, port: int) -> list[str]:
    """One worker of a server that runs the app on 127.0.0.1:`port`: granian as `brain serve` starts it, or gunicorn
    with gthread workers as the web replicas run it."""
    if server == "granian":
        return [sys.executable, "-m", "granian", *web_server_args("127.0.0.1", port, 1)]
    return [sys.executable, "-m", "gunicorn", "brain.wsgi:application", "--bind", f"127.0.0.1:{port}",
            "--workers", "1", "--worker-class", "gthread", "--threads", "4", "--log-level", "warning"]


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Returns once 127.0.0.1:`port` accepts connections; fails if `proc` exits or `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listening on port {port} (exit code {proc.poll()})")


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


# Our top-level packages: a directory the brain is started from may hold packages of the same names.
OUR_PACKAGES = ("brain", "projects", "sessions", "knowledge", "mcpgw", "dashboard")


def decoy_packages(directory: Path) -> Path:
    """`directory` holding a package of each of our names that fails on import: a process started there that
    imports one of them instead of ours fails loudly."""
    for name in OUR_PACKAGES:
        (directory / name).mkdir(parents=True, exist_ok=True)
        (directory / name / "__init__.py").write_text(f"raise ImportError('{name} from the working directory')\n")
    return directory

