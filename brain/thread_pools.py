"""Named thread pools, one per process: a pool inherited through fork has no threads behind it, so each process
makes its own on first use."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pools: dict[str, tuple[int, ThreadPoolExecutor]] = {}


def process_pool(name: str, threads: int) -> ThreadPoolExecutor:
    """This process's pool called `name` (its threads are named after it), of at most `threads` threads."""
    with _lock:
        made = _pools.get(name)
        if made is None or made[0] != os.getpid():
            made = _pools[name] = (os.getpid(), ThreadPoolExecutor(threads, thread_name_prefix=name))
        return made[1]
