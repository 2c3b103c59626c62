"""The web replicas' access log leaves out the MCP calls the gateway logs itself (a POST to /mcp answered 2xx),
and keeps a line for every other request, run by gunicorn itself with brain/gunicorn_conf.py."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from brain import gunicorn_conf
from brain.gunicorn_log import SHM, app_logged, heartbeat_dir
from tests.support.proc import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _request(port: int, path: str, *, post: bool) -> None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=b"{}" if post else None)
    with contextlib.suppress(urllib.error.HTTPError):  # a 401 is an answer too
        urllib.request.urlopen(request, timeout=10).read()


def test_only_answered_mcp_posts_leave_the_access_log(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "access.log"
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "tests.support.status_wsgi:application", "-c",
                             "python:brain.gunicorn_conf", "--bind", f"127.0.0.1:{port}", "--workers", "1",
                             "--access-logfile", str(log)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        for path, post in (("/mcp", True), ("/mcp?status=202", True), ("/mcp?status=401", True), ("/mcp", False),
                           ("/api/v1/projects", True), ("/healthz", False)):
            _request(port, path, post=post)
        # The worker's heartbeat file (made and unlinked by gunicorn, kept open) lives on tmpfs.
        workers = [w.pid for w in psutil.Process(proc.pid).children()]
        assert workers and all(any(os.readlink(fd).startswith(f"{SHM}/") for fd in Path(f"/proc/{pid}/fd").iterdir())
                               for pid in workers)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lines = log.read_text().splitlines()
    # A worker thread writes its line after the answer, so the next request's line may come first.
    logged = sorted((line.split('"')[1], line.split('"')[2].split()[0]) for line in lines)
    assert logged == sorted([("POST /mcp?status=401 HTTP/1.1", "401"), ("GET /mcp HTTP/1.1", "200"),
                             ("POST /api/v1/projects HTTP/1.1", "200"), ("GET /healthz HTTP/1.1", "200")])


def test_which_requests_the_gateway_logged() -> None:
    post = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp"}
    assert app_logged(post, "200 OK") and app_logged(post, "202 Accepted")
    assert not app_logged(post, "401 Unauthorized") and not app_logged(post, None)
    assert not app_logged({**post, "REQUEST_METHOD": "GET"}, "200 OK")
    assert not app_logged({**post, "PATH_INFO": "/mcp/other"}, "200 OK")


def test_the_heartbeat_lives_in_memory_where_it_can() -> None:
    assert heartbeat_dir() == SHM == gunicorn_conf.worker_tmp_dir  # Linux has a writable /dev/shm
