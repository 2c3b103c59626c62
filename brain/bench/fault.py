"""Fault probe: writes through /api/v1 under load while the embedded PostgreSQL's postmaster is killed.

Each writer teaches numbered rules with an Idempotency-Key per rule and retries until acknowledged (any
503, connection error or timeout is retried with the same key). The ledger of acknowledged writes is
then compared with what the database holds: every acknowledged rule must be stored exactly once.
Prints the outage as clients saw it (first failure to first success after the kill) and the counts.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Ledger:
    acked: dict[str, str] = field(default_factory=dict)  # rule text -> id from the acknowledged answer
    retries: int = 0
    unavailable: int = 0  # 503 answers (the retryable kind)
    other_errors: list[str] = field(default_factory=list)
    kill_at: float | None = None
    failing_since: float | None = None  # first failed attempt after the kill
    recovered_at: float | None = None  # first acknowledged write after that

    @property
    def outage_seconds(self) -> float | None:
        """From the kill to the first write acknowledged after clients started failing."""
        if self.kill_at is None or self.recovered_at is None:
            return None
        return self.recovered_at - self.kill_at
    lock: threading.Lock = field(default_factory=threading.Lock)


def _post(url: str, token: str, body: dict[str, Any], key: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{url}/api/v1/knowledge", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Idempotency-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _write_one(url: str, token: str, rule: str, ledger: Ledger, deadline: float) -> None:
    key = str(uuid.uuid4())
    while time.monotonic() < deadline:
        try:
            status, body = _post(url, token, {"rule": rule}, key)
        except OSError:
            status, body = 0, None
        if status == 201:
            with ledger.lock:
                ledger.acked[rule] = body["id"]
                if ledger.failing_since is not None and ledger.recovered_at is None:
                    ledger.recovered_at = time.monotonic()
            return
        with ledger.lock:
            ledger.retries += 1
            ledger.unavailable += status == 503
            if ledger.kill_at is not None and ledger.failing_since is None:
                ledger.failing_since = time.monotonic()
            if status not in (0, 503):
                ledger.other_errors.append(f"{status}: {str(body)[:200]}")
        time.sleep(0.2)


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pg" / "postmaster.pid").read_text().splitlines()[0])


def run_probe(*, url: str, token: str, data_dir: Path, writers: int = 4, per_writer: int = 40,
              kill_after: int = 30, deadline_s: float = 120.0) -> Ledger:
    """Runs the writers; once `kill_after` writes are acknowledged, SIGKILLs the postmaster."""
    ledger = Ledger()
    deadline = time.monotonic() + deadline_s
    tag = uuid.uuid4().hex[:8]

    def writer(n: int) -> None:
        for i in range(per_writer):
            _write_one(url, token, f"ledger {tag} writer {n} rule {i}", ledger, deadline)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    while len(ledger.acked) < kill_after and time.monotonic() < deadline:
        time.sleep(0.05)
    ledger.kill_at = time.monotonic()
    os.kill(postmaster_pid(data_dir), signal.SIGKILL)
    for thread in threads:
        thread.join(max(1.0, deadline - time.monotonic()))
    return ledger


def stored_counts(url: str, token: str, rules: set[str]) -> dict[str, int]:
    """How many stored rows each ledger rule has, read back through the API (all pages)."""
    counts = dict.fromkeys(rules, 0)
    cursor = ""
    while True:
        request = urllib.request.Request(
            f"{url}/api/v1/knowledge?limit=100{'&cursor=' + cursor if cursor else ''}",
            headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            page = json.loads(response.read())
        for item in page["items"]:
            text = item.get("rule") or item.get("content")
            if text in counts:
                counts[text] += 1
        cursor = page.get("nextCursor") or ""
        if not cursor:
            return counts
