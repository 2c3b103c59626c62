"""`brain serve`: database, migrations, web server, Celery worker with beat, one supervisor.

Children run in their own process groups so shutdown can signal each whole tree; PostgreSQL is
stopped last. A lock file in the data dir keeps a second `serve` off the same data.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from brain.config import RuntimeConfig, runtime_config
from brain.embedded_db import check_writable
from brain.errors import StartupError

HELP = "run the web server, a Celery worker and beat (and the embedded database)"
_RESTART_LIMIT = 5
_STOP_GRACE_SECONDS = 10.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="address to bind (default BRAIN_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port to bind (default BRAIN_PORT or 8000)")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--no-worker", action="store_true", help="do not start the Celery worker and beat")


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    restarts: list[float] = field(default_factory=list)


def _say(message: str) -> None:
    print(f"brain serve: {message}", flush=True)


def _acquire_lock(data_dir: Path) -> IO[str]:
    check_writable(data_dir)  # a read-only home or a file in the way is one clear line, not a traceback
    handle = (data_dir / "serve.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "another process"
        raise StartupError(
            f"data dir {data_dir} is already served by pid {owner}; stop it first "
            "or give this copy its own BRAIN_DATA_DIR"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _check_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            raise StartupError(
                f"port {port} on {host} is in use; pass --port or set BRAIN_PORT to a free port"
            ) from None


def _children(host: str, port: int, web_workers: int, with_worker: bool, config: RuntimeConfig) -> list[Child]:
    python = sys.executable
    web = Child("web", [python, "-m", "granian", *web_server_args(host, port, web_workers)])
    children = [web]
    if with_worker:
        children.append(Child("worker", [
            python, "-m", "celery", "-A", "brain", "worker", "--beat", "--concurrency", "2",
            "--loglevel", "INFO", "--schedule", str(config.data_dir / "celerybeat-schedule"),
        ]))
    return children


# The directory holding the brain's own packages (site-packages, or the checkout). The web server and the worker
# run from it: granian and Celery put their working directory first on the module path, and the directory someone
# starts the brain from may hold packages named like ours (`projects/`, `sessions/`, ...).
PACKAGES_DIR = Path(__file__).resolve().parents[1]


def children_env(config: RuntimeConfig) -> dict[str, str]:
    """The environment of a web server or worker started for this process: the same settings (children compute
    the same database settings from it), with the data dir and a relative model dir made absolute, since the
    children run from PACKAGES_DIR."""
    env = dict(os.environ)
    env["BRAIN_DATA_DIR"] = str(config.data_dir)
    if env.get("BRAIN_EMBEDDINGS_MODEL_DIR"):
        env["BRAIN_EMBEDDINGS_MODEL_DIR"] = str(Path(env["BRAIN_EMBEDDINGS_MODEL_DIR"]).expanduser().resolve())
    return env


def web_server_args(host: str, port: int, workers: int) -> list[str]:
    """granian serving the app over HTTP/1.1: an MCP call took 10-20 % less web CPU than under gunicorn's gthread
    workers on the same two cores and one client's calls were answered 0.2-0.5 ms sooner (Rust parses requests and
    holds the connections; Python runs only the app; docs/benchmarks.md, issue 17, eleventh pass). On SIGTERM it
    stops accepting and lets the requests in flight finish for up to 5 s; a worker that dies is started again."""
    return [
        "--interface", "wsgi", "--host", host, "--port", str(port), "--workers", str(workers),
        "--blocking-threads", "8", "--http", "1", "--no-ws", "--workers-kill-timeout", "5",
        "--respawn-failed-workers", "--log-level", "warning", "--no-access-log", "brain.wsgi:served_application",
    ]


def _die_with_parent() -> None:
    """Runs in the child before exec: if the supervisor is killed outright (SIGKILL, OOM), the kernel
    sends the child SIGTERM, so a crashed `serve` never leaves a web server or worker behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _start(child: Child, env: dict[str, str]) -> None:
    child.process = subprocess.Popen(
        child.argv, env=env, cwd=PACKAGES_DIR, start_new_session=True, preexec_fn=_die_with_parent
    )


def _stop_all(children: list[Child]) -> None:
    # Only the leaders get SIGTERM: granian and Celery then shut their own workers down gracefully.
    for child in children:
        if child.process and child.process.poll() is None:
            child.process.terminate()
    deadline = time.monotonic() + _STOP_GRACE_SECONDS
    for child in children:
        if child.process is None:
            continue
        try:
            child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(child.process.pid, signal.SIGKILL)
            child.process.wait()
        # Celery pool processes and granian workers share the child's group: make sure none linger.
        _signal_group(child.process.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _wait_ready(url: str, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:  # noqa: S310 - our own URL
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def _supervise(children: list[Child], env: dict[str, str], stopping: Callable[[], bool],
               tick: Callable[[], None] = lambda: None) -> int:
    while not stopping():
        tick()  # the embedded database's watch (brain/db_watch.py), when there is one
        for child in children:
            assert child.process is not None
            code = child.process.poll()
            if code is None:
                continue
            now = time.monotonic()
            child.restarts = [t for t in child.restarts if now - t < 60] + [now]
            if len(child.restarts) > _RESTART_LIMIT:
                _say(f"{child.name} exited {_RESTART_LIMIT} times within a minute (last code {code}); stopping")
                return 1
            _say(f"{child.name} exited with code {code}; restarting")
            _signal_group(child.process.pid, signal.SIGKILL)
            _start(child, env)
        time.sleep(0.5)
    return 0


def run(args: argparse.Namespace) -> int:
    config = runtime_config()
    host, port = args.host or config.host, args.port or config.port
    lock = _acquire_lock(config.data_dir)
    _check_port(host, port)
    stop_requested = False

    def _request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    from brain.cli import prepare_database, setup_django

    stop_database = prepare_database(config)
    children: list[Child] = []
    try:
        setup_django()
        from django.core.management import call_command

        _say("applying migrations")
        call_command("migrate", interactive=False, verbosity=0)
        from django.utils.module_loading import import_string

        sign_in = import_string("projects.services.bootstrap.ensure_first_admin")(config.data_dir)
        import_string("knowledge.embeddings.local_model_prepare")()  # once here, not in each worker's first request
        env = children_env(config)
        # The children's default BRAIN_PUBLIC_URL follows these; an unset BRAIN_PUBLIC_URL stays unset, so the
        # token wizard prints the address people browse to rather than a bind address such as 0.0.0.0.
        env["BRAIN_HOST"], env["BRAIN_PORT"] = host, str(port)
        children = _children(host, port, args.web_workers, not args.no_worker, config)
        for child in children:
            _start(child, env)
        url = f"http://{host}:{port}"
        if not _wait_ready(url):
            _say("the web server did not become ready within 60 s; see the log above")
            return 1
        _say(f"External Brain is serving on {url}")
        _say(f"MCP endpoint: {url}/mcp   admin: {url}/admin/")
        _say(sign_in)
        _say("press Ctrl-C to stop")
        watch = None if config.database_url else import_string("brain.db_watch.DatabaseWatch")(config.data_dir)
        return _supervise(children, env, lambda: stop_requested, watch.tick if watch else lambda: None)
    finally:
        _say("stopping")
        _stop_all(children)
        stop_database()
        lock.close()
        _say("stopped")

