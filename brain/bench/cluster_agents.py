"""Simulated agents of `brain bench cluster` and the ledger of the writes the server acknowledged.

Even agents speak the handshake era (one MCP session, its requests spread over the replicas by the
balancer), odd agents the stateless era. Each repeats an agent's day: start a session with a prompt,
log two events, teach a rule, close the session with a learning (the close queues extraction). Every
write carries a unique marker, so the check at the end can tell a lost write from a duplicated one.
A write that failed is not re-sent (that could duplicate it); the close is re-sent, because it is
idempotent (`alreadyClosed`).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpgw import protocol as p

MODERN = p.MODERN_VERSIONS[-1]


@dataclass
class Call:
    tool: str
    at: float  # seconds since the run started
    ms: float
    ok: bool
    replica: str
    error: str = ""


@dataclass
class Ledger:
    """Everything acknowledged, by kind, plus every call made (the figures come from the calls)."""

    sessions: set[str] = field(default_factory=set)
    closes: set[str] = field(default_factory=set)
    events: dict[str, str] = field(default_factory=dict)  # event id -> marker
    teaches: dict[str, str] = field(default_factory=dict)  # knowledge id -> marker
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acknowledged(self) -> int:
        return len(self.sessions) + len(self.closes) + len(self.events) + len(self.teaches)


class CallFailed(Exception):
    pass


def http_error(response: httpx.Response) -> str:
    """`HTTP <status> (app)` when a replica answered (JSON), `(balancer)` when HAProxy did (its own page)."""
    who = "app" if response.headers.get("content-type", "").startswith("application/json") else "balancer"
    return f"HTTP {response.status_code} ({who})"


class Agent:
    def __init__(self, base: str, token: str, index: int, ledger: Ledger, started: float) -> None:
        self.http = httpx.Client(base_url=base, timeout=60.0, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"})
        self.index = index
        self.modern = index % 2 == 1
        self.ledger = ledger
        self.started = started
        self.ids = 0
        self.session_headers: dict[str, str] = {}

    def _handshake(self) -> None:
        self.ids += 1
        init = {"jsonrpc": "2.0", "id": self.ids, "method": "initialize", "params": {
            "protocolVersion": p.LATEST_LEGACY, "capabilities": {},
            "clientInfo": {"name": f"cluster-agent-{self.index}", "version": "1"}}}
        response = self.http.post("/mcp", json=init)
        response.raise_for_status()
        self.session_headers = {p.SESSION_HEADER: response.headers[p.SESSION_HEADER],
                                p.VERSION_HEADER: p.LATEST_LEGACY}
        self.http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers=self.session_headers).raise_for_status()

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tools/call, recorded; raises CallFailed on any failure (transport, HTTP, JSON-RPC, tool error)."""
        self.ids += 1
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if self.modern:
            params["_meta"] = {p.PROTOCOL_VERSION_META_KEY: MODERN, p.CLIENT_CAPABILITIES_META_KEY: {},
                               p.CLIENT_INFO_META_KEY: {"name": f"cluster-agent-{self.index}", "version": "1"}}
            headers = {p.VERSION_HEADER: MODERN, p.METHOD_HEADER: "tools/call", p.NAME_HEADER: tool}
        else:
            headers = self.session_headers
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params}
        start = time.monotonic()
        replica, error, result = "", "", None
        try:
            response = self.http.post("/mcp", json=body, headers=headers)
            replica = response.headers.get("X-Brain-Replica", "")
            if response.status_code != 200:
                error = http_error(response)
            else:
                data = response.json()
                result = data.get("result")
                if result is None:
                    error = f"rpc {data.get('error', {}).get('code')}: {data.get('error', {}).get('message', '')[:80]}"
                elif result.get("isError"):
                    error = f"tool error: {str(result.get('content'))[:100]}"
        except (httpx.HTTPError, ValueError) as exc:
            error = f"{type(exc).__name__}: {str(exc)[:80]}"
        self._record(tool, start, replica, error)
        if error or result is None:
            raise CallFailed(error)
        return dict(result.get("structuredContent") or {})

    def _record(self, tool: str, start: float, replica: str, error: str) -> None:
        now = time.monotonic()
        call = Call(tool, round(start - self.started, 2), (now - start) * 1000, not error, replica, error)
        with self.ledger.lock:
            self.ledger.calls.append(call)

    def day(self, n: int) -> None:
        """One agent day; a failed step ends the day early (the next day starts fresh)."""
        tag = f"a{self.index}d{n}-{uuid.uuid4().hex[:10]}"
        started = self.call("brain_start_session", {
            "clientType": "cluster-bench", "projectName": f"cluster {self.index % 3}",
            "prompt": f"fix the flaky retry test in the payments module {tag}"})
        session_id = started["sessionId"]
        self._ack("sessions", session_id)
        for kind in ("test", "user_correction"):
            marker = f"{tag}-{kind}"
            event = self.call("brain_log_event", {"sessionId": session_id, "eventType": kind,
                                                  "payload": {"text": f"retries must back off {marker}",
                                                              "marker": marker}})
            self._ack("events", event["id"], marker)
        marker = f"{tag}-teach"
        taught = self.call("brain_teach_knowledge", {"rule": f"Back off exponentially between retries ({marker})",
                                                     "trigger": "writing retry loops", "type": "heuristic"})
        self._ack("teaches", taught["id"], marker)
        self._close(session_id, tag)

    def _close(self, session_id: str, tag: str) -> None:
        arguments = {"sessionId": session_id, "success": True, "filesModified": 2, "summary": f"fixed {tag}",
                     "learnings": [{"trigger": "retry loops", "rule": f"Cap retry attempts at five ({tag})",
                                    "type": "heuristic"}]}
        for attempt in range(4):
            try:
                self.call("brain_report_session_outcome", arguments)
            except CallFailed:
                time.sleep(0.5 * (attempt + 1))
                continue
            self._ack("closes", session_id)
            return
        raise CallFailed("close failed 4 times")

    def _ack(self, kind: str, key: str, marker: str = "") -> None:
        with self.ledger.lock:
            target = getattr(self.ledger, kind)
            if isinstance(target, set):
                target.add(key)
            else:
                target[key] = marker

    def run(self, until: float) -> None:
        n = 0
        while time.monotonic() < until:
            n += 1
            try:
                if not self.modern and not self.session_headers:
                    self._handshake()
                self.day(n)
            except (CallFailed, httpx.HTTPError, KeyError):
                time.sleep(0.3)
                # A handshake session is kept across failures: it lives in the database, so any replica
                # serves it after a fault; only a 404 (session gone) would need a new one.
                if not self.modern and self._session_gone():
                    self.session_headers = {}
        self.http.close()

    def _session_gone(self) -> bool:
        with self.ledger.lock:
            last = next((c for c in reversed(self.ledger.calls) if c.error), None)
        return bool(last and last.error.startswith("HTTP 404"))


def probe(base: str, token: str, until: float, started: float, out: list[tuple[float, bool, str]]) -> None:
    """A cheap stateless read every 0.25 s through the balancer: the service is up when it answers."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               p.VERSION_HEADER: MODERN, p.METHOD_HEADER: "tools/call", p.NAME_HEADER: "brain_list_projects",
               "X-Brain-Probe": "1"}  # first in HAProxy's queue (cluster_procs.HAPROXY_CFG)
    meta = {p.PROTOCOL_VERSION_META_KEY: MODERN, p.CLIENT_CAPABILITIES_META_KEY: {},
            p.CLIENT_INFO_META_KEY: {"name": "cluster-probe", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "brain_list_projects", "arguments": {}, "_meta": meta}}
    with httpx.Client(base_url=base, timeout=5.0, headers=headers) as http:
        while time.monotonic() < until:
            at = time.monotonic() - started
            why = ""
            try:
                response = http.post("/mcp", json=body)
                ok = response.status_code == 200 and not response.json().get("result", {}).get("isError", True)
                why = "" if ok else http_error(response)
            except (httpx.HTTPError, ValueError) as exc:
                ok, why = False, type(exc).__name__
            out.append((round(at, 2), ok, why))
            time.sleep(0.25)
