"""`brain bench mcp --events N`: brain_log_event throughput over /mcp, each client writing to its own session.

Every client opens a handshake-era MCP session and a brain session (brain_start_session without a prompt),
then logs its share of N events back to back, as agents do (no `clientRequestId`: with one, each write also
records its idempotency key). A write is never resent: one lost with its connection counts as an error.
Afterwards each brain session is read back over the REST API (`GET /api/v1/sessions/{id}`): every acknowledged
event must be stored. On the bench's own temporary brain it also times how long after the last write every event
had its vector (the batcher embeds them off the request path, below the requests' priority), by counting the
events still without one in that brain's database every 50 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from brain.bench.lean_http import RESENT_ERRORS
from brain.bench.mcp_load import bench_http, lean_connection, rpc_open, rpc_post, tool_ok

LOG_TOOL = "brain_log_event"


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def _writer(http: httpx.AsyncClient, url: str, events: int, latencies: list[float],
                  errors: list[str]) -> tuple[str, int]:
    """(brain session id, events acknowledged) of one client."""
    headers = await rpc_open(http, url, modern=False)
    opened = await rpc_post(http, url, _call(0, "brain_start_session", {"clientType": "bench-events"}), headers)
    session_id = opened.json()["result"]["structuredContent"]["sessionId"]
    acknowledged = 0
    connection = lean_connection(http, url, headers)
    for n in range(events):
        arguments = {"sessionId": session_id, "eventType": "note",
                     "payload": {"text": f"step {n}: ran the test suite, 3 failures in the billing module"}}
        started = time.perf_counter()
        try:
            response = await connection.post(_call(n + 1, LOG_TOOL, arguments), resend=False)
        except (*RESENT_ERRORS, OSError) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        latencies.append(time.perf_counter() - started)
        if tool_ok(response):
            acknowledged += 1
        else:
            errors.append(f"HTTP {response.status_code}: {response.body[:200]!r}")
    await connection.close()
    await http.delete(url, headers=headers)
    return session_id, acknowledged


async def _stored(http: httpx.AsyncClient, base: str, session_ids: list[str]) -> int:
    total = 0
    for session_id in session_ids:
        response = await http.get(f"{base}/api/v1/sessions/{session_id}")
        response.raise_for_status()
        total += sum(1 for event in response.json()["events"] if event["eventType"] == "note")
    return total


Pending = Callable[[], int]
CATCH_UP_TIMEOUT_S = 300.0


def brain_database(data_dir: str) -> str:
    """The connection string of the embedded database of the brain at `data_dir`."""
    from brain.embedded_db import server_for

    return server_for(Path(data_dir) / "pg").url()


def vectors_pending(conninfo: str) -> Pending:
    """Counts the events in the database at `conninfo` that still have no vector."""
    import psycopg

    def count() -> int:
        with psycopg.connect(conninfo) as conn:
            row = conn.execute("SELECT count(*) FROM agent_sessions_sessionevent "
                               "WHERE embedding IS NULL AND content <> ''").fetchone()
        return int(row[0]) if row else 0
    return count


def vector_watch(data_dir: str | None) -> Pending | None:
    """What counts the events still without a vector in the temporary brain at `data_dir`; None when there is no
    database to ask (a brain given by --url) or embeddings are off (no vector would ever come)."""
    from knowledge.embeddings import settings_from_django

    if not data_dir or settings_from_django().provider == "none":
        return None
    return vectors_pending(brain_database(data_dir))


def _caught_up(pending: Pending | None, since: float) -> float | None:
    """Seconds from `since` until no event lacks its vector (None without a database to ask, or on timeout)."""
    if pending is None:
        return None
    while pending():
        if time.perf_counter() - since > CATCH_UP_TIMEOUT_S:
            return None
        time.sleep(0.05)
    return round(time.perf_counter() - since, 2)


async def measure_events(base: str, token: str, *, clients: int, events: int,
                         pending: Pending | None = None) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    async with bench_http(token, clients) as http:
        started = time.perf_counter()
        written = await asyncio.gather(*[_writer(http, f"{base}/mcp", events // clients, latencies, errors)
                                         for _ in range(clients)])
        elapsed = time.perf_counter() - started
        caught_up = _caught_up(pending, started + elapsed)
        stored = await _stored(http, base, [session_id for session_id, _ in written])
    cuts = statistics.quantiles(latencies, n=100)
    return {"clients": clients, "events": len(latencies), "p50": round(cuts[49] * 1000, 2),
            "p95": round(cuts[94] * 1000, 2), "rate": round(len(latencies) / elapsed, 1),
            "acknowledged": sum(acked for _, acked in written), "stored": stored, "errors": len(errors),
            "firstError": errors[0] if errors else None, "vectorsCaughtUpS": caught_up}


def events_series(base: str, token: str, *, clients: list[int], events: int, quiet: bool,
                  pending: Pending | None = None) -> list[dict[str, Any]]:
    rows = []
    for count in clients:
        asyncio.run(measure_events(base, token, clients=count, events=max(50, count * 10), pending=pending))  # warm-up
        row = asyncio.run(measure_events(base, token, clients=count, events=events, pending=pending))
        rows.append(row)
        if not quiet:
            lag = "" if row["vectorsCaughtUpS"] is None else f", every vector {row['vectorsCaughtUpS']} s after"
            print(f"  {count:>3} client(s): events={row['events']}  p50={row['p50']:.2f} ms  p95={row['p95']:.2f} ms"
                  f"  {row['rate']:.0f} events/s  acknowledged {row['acknowledged']}, stored {row['stored']}{lag}",
                  flush=True)
    return rows
