"""Readiness checks shared by `/readyz` and `brain doctor`. Each returns (ok, detail)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Check = tuple[bool, str]


def check_database() -> Check:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT current_setting('server_version')")
            row = cur.fetchone()
        return True, f"PostgreSQL {row[0] if row else '?'}"
    except Exception as exc:
        return False, f"unreachable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def check_pgvector() -> Check:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
            if row:
                return True, f"pgvector {row[0]}"
            cur.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            available = cur.fetchone()
        if available:
            return False, f"pgvector {available[0]} available but not installed: run `brain manage migrate`"
        return False, "pgvector is not installed on this server"
    except Exception as exc:
        return False, f"cannot check: {type(exc).__name__}"


def check_broker() -> Check:
    url: str = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / ".probe"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            return False, f"filesystem broker at {folder} not writable: {exc.strerror}"
        return True, f"filesystem broker at {folder}"
    try:
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        client.ping()
        return True, f"redis at {_redact(url)}"
    except Exception as exc:
        return False, f"redis at {_redact(url)} unreachable: {exc}"


def pending_migrations() -> list[object]:
    executor = MigrationExecutor(connection)
    return list(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def check_migrations() -> Check:
    try:
        pending = pending_migrations()
    except Exception as exc:
        return False, f"cannot read migration state: {type(exc).__name__}"
    if pending:
        return False, f"{len(pending)} migration(s) pending: run `brain manage migrate`"
    return True, "all applied"


def _redact(url: str) -> str:
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def readiness() -> dict[str, Check]:
    return {"database": check_database(), "pgvector": check_pgvector(), "broker": check_broker()}
