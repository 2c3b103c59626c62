"""brain/gunicorn_conf.py drains: a request in flight when the replica gets SIGTERM still gets its answer
(a graceful timeout shorter than the request would cut it), and the replica then exits cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.proc import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_sigterm_finishes_the_request_in_flight() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "tests.support.slow_wsgi:application", "-c",
                             "python:brain.gunicorn_conf", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        answers: list[str] = []
        thread = threading.Thread(target=lambda: answers.append(
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read().decode()))
        thread.start()
        time.sleep(1)  # the request is being served
        proc.send_signal(signal.SIGTERM)
        thread.join(timeout=30)
        assert answers == ["drained"]
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
