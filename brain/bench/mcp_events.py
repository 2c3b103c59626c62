"""`brain bench mcp --events N`: brain_log_event throughput over /mcp, each client writing to its own session.

Every client opens a handshake-era MCP session and a brain session (brain_start_session without a prompt),
then logs its share of N events, as agents do (no `clientRequestId`: with one, each write also records its
idempotency key): back to back, or paced to a total rate across the clients (`--rate`), the load a target such as
"500 events a second" names. Each client writes its own texts. A write is never resent: one lost with its
connection counts as an error.
Afterwards each brain session is read back over the REST API (`GET /api/v1/sessions/{id}`): every acknowledged
event must be stored. On the bench's own temporary brain it also times how long after the last write every event
had its vector (the batcher embeds them off the request path, below the requests' priority), and the longest any
event waited for it: every 50 ms from the first write, one connection to that brain's database counts the events
still without a vector and reads the age of the oldest.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from brain.bench.lean_http import RESENT_ERRORS
from brain.bench.mcp_load import bench_http, lean_connection, rpc_open, rpc_post, tool_ok

LOG_TOOL = "brain_log_event"
MODULES = ("billing", "search", "auth", "export", "checkout", "reports", "upload", "sync")


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def event_text(client: int, n: int) -> str:
    """A short note of the kind agents log; no two clients share one (a batch of equal texts costs less)."""
    module = MODULES[(client + n) % len(MODULES)]
    return f"client {client} step {n}: ran the test suite, {n % 7} failures in the {module} module"


async def _writer(http: httpx.AsyncClient, url: str, client: int, events: int, interval: float,
                  latencies: list[float], errors: list[str]) -> tuple[str, int]:
    """(brain session id, events acknowledged) of one client, which sends an event every `interval` seconds
    (0: back to back); one behind its schedule sends at once."""
    headers = await rpc_open(http, url, modern=False)
    opened = await rpc_post(http, url, _call(0, "brain_start_session", {"clientType": "bench-events"}), headers)
    session_id = opened.json()["result"]["structuredContent"]["sessionId"]
    acknowledged = 0
    connection = lean_connection(http, url, headers)
    begun = time.perf_counter()
    for n in range(events):
        if interval and (wait := begun + n * interval - time.perf_counter()) > 0:
            await asyncio.sleep(wait)
        arguments = {"sessionId": session_id, "eventType": "note", "payload": {"text": event_text(client, n)}}
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


# (events without a vector, seconds the oldest of them has waited)
Pending = Callable[[], tuple[int, float]]
CATCH_UP_TIMEOUT_S = 300.0
SAMPLE_S = 0.05


def brain_database(data_dir: str) -> str:
    """The connection string of the embedded database of the brain at `data_dir`."""
    from brain.embedded_db import server_for

    return server_for(Path(data_dir) / "pg").url()


class VectorsPending:
    """Asks the database at `conninfo` about the events that still have no vector, on one connection kept open
    between questions (a new one every 50 ms would cost the server a backend each time) until `close`.

    `indexed`: on its first connection it gives the events table a partial index of the events still without a
    vector, so that each question reads the backlog alone. Without it every question read the whole table: 1.2 ms at
    6,000 events, twenty times a second and growing with every event written, CPU taken from the brain it measures
    (docs/benchmarks.md, issue 17, forty-first pass). The index costs each write one entry in a small btree; only
    the bench's own temporary brain gets it."""

    SQL = ("SELECT count(*), coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0) "
           "FROM agent_sessions_sessionevent WHERE embedding IS NULL AND content <> ''")
    INDEX = "bench_event_vector_pending"
    INDEX_SQL = (f"CREATE INDEX IF NOT EXISTS {INDEX} ON agent_sessions_sessionevent (created_at) "
                 "WHERE embedding IS NULL AND content <> ''")

    def __init__(self, conninfo: str, *, indexed: bool = False) -> None:
        self.conninfo, self.indexed = conninfo, indexed
        self.connection: Any = None

    def __call__(self) -> tuple[int, float]:
        import psycopg

        if self.connection is None:
            self.connection = psycopg.connect(self.conninfo, autocommit=True)
            if self.indexed:
                self.connection.execute(self.INDEX_SQL)
        row = self.connection.execute(self.SQL).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def vector_watch(data_dir: str | None) -> VectorsPending | None:
    """What asks about the events still without a vector in the temporary brain at `data_dir`; None when there is
    no database to ask (a brain given by --url) or embeddings are off (no vector would ever come)."""
    from knowledge.embeddings import settings_from_django

    if not data_dir or settings_from_django().provider == "none":
        return None
    return VectorsPending(brain_database(data_dir), indexed=True)


class LagWatch:
    """Samples `pending` on its own thread from the first write: the longest any event has waited for its vector
    and, once the writes are over, when the last one got it."""

    def __init__(self, pending: Pending) -> None:
        self.pending, self.longest = pending, 0.0
        self.writes_ended: float | None = None
        self.caught_up: float | None = None
        self._thread = threading.Thread(target=self._sample, name="bench-lag", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while True:
            now = time.perf_counter()
            waiting, oldest = self.pending()
            self.longest = max(self.longest, oldest)
            ended = self.writes_ended
            if ended is not None and not waiting:
                self.caught_up = max(0.0, now - ended)
                return
            if ended is not None and now - ended > CATCH_UP_TIMEOUT_S:
                return
            time.sleep(SAMPLE_S)

    def finish(self, writes_ended: float) -> tuple[float | None, float]:
        """(seconds from `writes_ended` until no event lacked its vector, None on timeout; the longest wait)."""
        self.writes_ended = writes_ended
        self._thread.join()
        return (None if self.caught_up is None else round(self.caught_up, 2)), round(self.longest, 2)


async def measure_events(base: str, token: str, *, clients: int, events: int, rate: float = 0.0,
                         pending: Pending | None = None) -> dict[str, Any]:
    """`rate`: events a second across all clients (0: each client back to back)."""
    latencies: list[float] = []
    errors: list[str] = []
    interval = clients / rate if rate else 0.0
    async with bench_http(token, clients) as http:
        watch = LagWatch(pending) if pending else None
        started = time.perf_counter()
        written = await asyncio.gather(*[_writer(http, f"{base}/mcp", client, events // clients, interval,
                                                 latencies, errors) for client in range(clients)])
        elapsed = time.perf_counter() - started
        caught_up, longest = watch.finish(started + elapsed) if watch else (None, None)
        stored = await _stored(http, base, [session_id for session_id, _ in written])
    cuts = statistics.quantiles(latencies, n=100)
    return {"clients": clients, "events": len(latencies), "p50": round(cuts[49] * 1000, 2),
            "p95": round(cuts[94] * 1000, 2), "rate": round(len(latencies) / elapsed, 1), "targetRate": rate or None,
            "acknowledged": sum(acked for _, acked in written), "stored": stored, "errors": len(errors),
            "firstError": errors[0] if errors else None, "vectorsCaughtUpS": caught_up, "vectorWaitMaxS": longest}


def events_series(base: str, token: str, *, clients: list[int], events: int, quiet: bool,
                  rates: list[float] | None = None, pending: Pending | None = None) -> list[dict[str, Any]]:
    """A series of `events` at each client count and, within it, at each of `rates` (events a second, 0: back to
    back), paced rates from the lowest and back to back last, each after one warm-up of the client count."""
    rows = []
    for count in clients:
        asyncio.run(measure_events(base, token, clients=count, events=max(50, count * 10), pending=pending))  # warm-up
        for rate in in_turn(rates or [0.0]):
            row = asyncio.run(measure_events(base, token, clients=count, events=events, rate=rate, pending=pending))
            rows.append(row)
            if not quiet:
                print(f"  {count:>3} client(s){_rate_label(rate, rates)}: events={row['events']}  "
                      f"p50={row['p50']:.2f} ms  p95={row['p95']:.2f} ms  {row['rate']:.0f} events/s  "
                      f"acknowledged {row['acknowledged']}, stored {row['stored']}{_lag_text(row)}", flush=True)
    return rows


def in_turn(rates: list[float]) -> list[float]:
    """The order a series runs its rates in: paced ones from the lowest, back to back (0) last."""
    return sorted(rates, key=lambda rate: (rate == 0, rate))


def paced_text(rates: list[float]) -> str:
    """How a series header names its pace: nothing for back to back alone."""
    paced = [f"{rate:g}" for rate in in_turn(rates) if rate]
    if not paced:
        return ""
    back_to_back = ", then back to back" if 0 in rates else ""
    return f", paced to {', '.join(paced)}/s{' in turn' if len(rates) > 1 else ''}{back_to_back}"


def _rate_label(rate: float, rates: list[float] | None) -> str:
    return f" {_pace(rate)}" if rates and len(rates) > 1 else ""


# "Searchable within a second" (issue 17): the longest any event waited for its vector.
VECTOR_WAIT_TARGET_S = 1.0


def within_a_second(rows: list[dict[str, Any]], *, quiet: bool) -> list[dict[str, Any]]:
    """Per client count of a series at several rates: the highest asked rate up to which every event had its vector
    within VECTOR_WAIT_TARGET_S (`upTo`, None: not at the lowest; 0 stands for back to back), the rate reached there,
    and the first rate at which some event waited longer, with that wait."""
    verdicts = []
    for count in dict.fromkeys(row["clients"] for row in rows):
        kept: dict[str, Any] | None = None
        missed: dict[str, Any] | None = None
        for row in (row for row in rows if row["clients"] == count):
            if row["vectorWaitMaxS"] is not None and row["vectorWaitMaxS"] <= VECTOR_WAIT_TARGET_S:
                kept = row
            else:
                missed = row
                break
        verdict = {"clients": count, "upTo": _asked(kept), "reached": kept["rate"] if kept else None,
                   "firstMiss": _asked(missed), "firstMissWaitS": missed["vectorWaitMaxS"] if missed else None}
        verdicts.append(verdict)
        if not quiet:
            print(_verdict_text(verdict), flush=True)
    return verdicts


def _asked(row: dict[str, Any] | None) -> float | None:
    return None if row is None else row["targetRate"] or 0.0


def _pace(rate: float) -> str:
    return f"at {rate:g}/s" if rate else "back to back"


def _verdict_text(verdict: dict[str, Any]) -> str:
    head = f"  {verdict['clients']:>3} client(s): "
    if verdict["upTo"] is None:
        kept = "no rate kept every vector within a second"
    else:
        ceiling = f"up to {verdict['upTo']:g}/s" if verdict["upTo"] else "even back to back"
        kept = f"every vector within a second {ceiling} ({verdict['reached']:.0f} events/s reached)"
    if verdict["firstMiss"] is None:
        return head + kept
    return head + f"{kept}; {_pace(verdict['firstMiss'])} the longest wait was {verdict['firstMissWaitS']} s"


def _lag_text(row: dict[str, Any]) -> str:
    if row["vectorWaitMaxS"] is None:
        return ""
    caught = "not within the timeout" if row["vectorsCaughtUpS"] is None else f"{row['vectorsCaughtUpS']} s after"
    return f"; every vector {caught}, the longest wait {row['vectorWaitMaxS']} s"
