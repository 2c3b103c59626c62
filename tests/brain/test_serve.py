"""`brain serve` as a user runs it: a fresh data dir, real children, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.proc import BRAIN, decoy_packages, free_port, run_brain

pytestmark = pytest.mark.slow


def _start(data_dir: Path, port: int, cwd: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "BRAIN_DATA_DIR": str(data_dir), "BRAIN_PORT": str(port)}
    env.pop("DATABASE_URL", None)
    return subprocess.Popen([BRAIN, "serve"], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 90) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"{needle!r} not printed; output:\n{''.join(lines)}")


def _postgres_for(data_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if proc.info["name"] == "postgres" and str(data_dir) in cmdline:
            found.append(proc)
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, int, list[str]]]:
    data_dir, port = tmp_path / "data", free_port()
    # Started where the user's own packages are named like ours: the web server and the worker still run ours.
    proc = _start(data_dir, port, cwd=decoy_packages(tmp_path / "home"))
    try:
        lines = _wait_for_line(proc, "press Ctrl-C")
        yield proc, data_dir, port, lines
    finally:
        _stop(proc, data_dir)


def _stop(proc: subprocess.Popen[str], data_dir: Path) -> None:
    """Graceful stop as a user would (SIGTERM); whatever survives is killed so no test leaks processes."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for leftover in _postgres_for(data_dir):
        leftover.terminate()


def test_serve_is_ready_and_sigterm_leaves_nothing_behind(served) -> None:
    proc, data_dir, port, lines = served
    if not any("MainProcess] celery@" in line for line in lines):  # the worker's "ready" line, if not seen yet
        lines += _wait_for_line(proc, "MainProcess] celery@")
    output = "".join(lines)
    assert f"serving on http://127.0.0.1:{port}" in output
    assert "sign in as admin@localhost with password" in output
    # The local model's int8 file was built by serve itself, once, before any worker answered.
    assert output.count("building the local embedding model") == 1
    assert output.index("building the local embedding model") < output.index("serving on")
    assert len(list((data_dir / "models").glob("*.onnx"))) == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "ok" and all(check["ok"] for check in body["checks"].values())
    descendants = psutil.Process(proc.pid).children(recursive=True)
    assert len(descendants) >= 2 and _postgres_for(data_dir)

    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)  # reads what serve printed since, so a full pipe never blocks it
    assert proc.returncode == 0, rest[-3000:]
    time.sleep(0.5)
    assert [p for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert _postgres_for(data_dir) == []


def test_second_serve_on_same_data_dir_refuses(served) -> None:
    _, data_dir, port, _ = served
    second = run_brain("serve", "--port", str(free_port()), env={"BRAIN_DATA_DIR": str(data_dir)})
    assert second.returncode == 1
    assert "already served by pid" in second.stderr
    # The first one is untouched.
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
        assert response.status == 200


def test_port_in_use_refuses_and_starts_nothing(served, tmp_path: Path) -> None:
    _, _, port, _ = served
    other = tmp_path / "other"
    result = run_brain("serve", "--port", str(port), env={"BRAIN_DATA_DIR": str(other)})
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr
    assert _postgres_for(other) == []


def test_killed_supervisor_takes_its_children_along(served) -> None:
    proc, data_dir, _, _ = served
    children = [p for p in psutil.Process(proc.pid).children() if "postgres" not in p.name()]
    programs = {word for child in children for word in child.cmdline() if word in ("granian", "celery")}
    assert programs == {"granian", "celery"}
    proc.kill()  # SIGKILL: no chance to clean up, as after an OOM kill
    proc.wait()
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == []
    # PostgreSQL outlives a killed supervisor; the next `brain serve` reuses it, and the fixture stops it.
    assert _postgres_for(data_dir)


def test_an_unwritable_data_dir_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    result = run_brain("serve", "--port", str(free_port()), env={"BRAIN_DATA_DIR": str(blocker / "data")})
    assert result.returncode == 1
    assert "not writable" in result.stderr and "BRAIN_DATA_DIR" in result.stderr
    assert "Traceback" not in result.stderr
