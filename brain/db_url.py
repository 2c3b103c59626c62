"""The address of the database this process is connected to, for the processes it starts."""

from __future__ import annotations

from urllib.parse import quote

from django.db import connection


def connection_url() -> str:
    """A postgres:// URL of the default connection's database (a socket directory as `?host=`), so a child
    process with DATABASE_URL set to it reads and writes what this process does (a test run's test_ database,
    or the embedded one)."""
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    password = f":{quote(db['PASSWORD'])}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or ""
    if host.startswith("/"):
        return f"postgres://{user}{password}@/{db['NAME']}?host={quote(host)}"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{user}{password}@{host}{port}/{db['NAME']}"
