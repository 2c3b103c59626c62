"""Background work's database server process at a lower CPU priority.

The vector batchers already run the model on threads at nice 10 (`knowledge.embeddings.lower_thread_priority`), so
under load the requests keep the cores. But storing a batch's vectors is PostgreSQL's work: each row's UPDATE
inserts into the table's HNSW graph, 0.3-0.9 ms of the server's CPU a row, and that ran at full priority beside the
requests' own statements. When the server runs on this machine (the embedded one, or any local PostgreSQL whose
backends this process may renice), the batcher's own backend is lowered as well; a remote server is left alone.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

LOCAL_HOSTS = frozenset({"localhost", ""})


def lower_backend_priority(connection: Any, nice: int) -> bool:
    """Lowers the CPU priority of the PostgreSQL backend serving `connection` (a Django connection) to `nice`, never
    raising it; False when the server is not on this machine or the OS refuses (nothing changes). Checked on every
    call (a few /proc reads and a system call): a reconnect gets a new backend, which may reuse an old one's pid."""
    connection.ensure_connection()
    info = connection.connection.info
    pid = int(info.backend_pid)
    if not (_local(str(info.host or "")) and _is_backend(pid)):
        return False
    try:
        if os.getpriority(os.PRIO_PROCESS, pid) < nice:
            os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError as exc:  # another user's server, or the backend is gone
        logger.debug("backend priority unchanged", extra={"pid": pid, "error": str(exc)})
        return False
    return True


def _local(host: str) -> bool:
    """A Unix socket (a directory path) or a loopback address."""
    if host.startswith("/") or host in LOCAL_HOSTS:
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host).is_loopback
    return False


def _is_backend(pid: int) -> bool:
    """`pid` is a PostgreSQL process whose parent is one too (a backend forked by its postmaster): a pid read from
    a connection must not lower some unrelated process of this machine."""
    try:
        parent = _ppid(pid)
        return _comm(pid) == "postgres" and _comm(parent) == "postgres"
    except (OSError, ValueError):
        return False


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def _ppid(pid: int) -> int:
    # The fields after the command name (which may hold spaces and parentheses): state, then the parent's pid.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])
