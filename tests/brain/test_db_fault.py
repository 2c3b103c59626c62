"""Fault test: `brain serve` under write load, its embedded PostgreSQL's postmaster SIGKILLed. The serve
restarts it (op=db.restart), writers retrying with Idempotency-Keys get every write acknowledged, and the
ledger matches the database: 0 lost, 0 duplicated."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from brain.bench.fault import run_probe, stored_counts
from tests.brain.test_serve import _stop
from tests.support.proc import BRAIN, free_port, run_brain

pytestmark = pytest.mark.slow


def _wait_for(log: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if needle in log.read_text(errors="replace"):
            return
        time.sleep(0.3)
    raise AssertionError(f"{needle!r} not logged:\n{log.read_text(errors='replace')[-3000:]}")


def test_killed_postmaster_is_restarted_and_no_acknowledged_write_is_lost_or_doubled(tmp_path: Path) -> None:
    data_dir, port, log = tmp_path / "data", free_port(), tmp_path / "serve.log"
    env = {**os.environ, "BRAIN_DATA_DIR": str(data_dir), "BRAIN_PORT": str(port)}
    env.pop("DATABASE_URL", None)
    with log.open("wb") as out:
        proc = subprocess.Popen([BRAIN, "serve", "--no-worker"], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for(log, "press Ctrl-C", proc)
        minted = run_brain("token", "create", "--email", "admin@localhost", "--name", "fault", env=env)
        token = re.search(r"ebt_[A-Za-z0-9_-]+", minted.stdout + minted.stderr)
        assert token, minted
        url = f"http://127.0.0.1:{port}"
        ledger = run_probe(url=url, token=token.group(0), data_dir=data_dir, writers=3, per_writer=10,
                           kill_after=8, deadline_s=150)
        _wait_for(log, "op=db.restart", proc, timeout=10)
        counts = stored_counts(url, token.group(0), set(ledger.acked))
        print(f"fault: acked={len(ledger.acked)}/30 retries={ledger.retries} 503s={ledger.unavailable} "
              f"outage={ledger.outage_seconds}")
        assert len(ledger.acked) == 30 and ledger.other_errors == []
        assert [rule for rule, n in counts.items() if n != 1] == []  # 0 lost, 0 duplicated
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _stop(proc, data_dir)  # type: ignore[arg-type]
