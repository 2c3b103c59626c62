"""`brain bench fuzz`: hostile input against a live brain, N cases per interface, the CI suite's generators.

Starts its own `brain serve` (web only) on a temporary data dir, with two tenants: the fuzzer and another
whose rows, session ids and texts the fuzzer references but must never see or change. MCP cases (both
endpoints, both eras) and REST cases (raw hostile requests plus schemathesis's positive and negative cases
over the OpenAPI document) go out over real sockets from a few client threads. Prints per interface: cases,
5xx, answers not in the interface's format, dropped connections, leaks, p50/p95. Exits 1 on any failure.
Needs the dev extras (hypothesis, schemathesis).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from brain.bench.mcp_load import _brain, served_brain

HELP = "fuzz /mcp, /mcp/cognibrain and /api/v1 of a temporary brain with hostile input (needs the dev extras)"
PATHS = ("/mcp", "/mcp/cognibrain")
TENANTS = ("fuzz@example.test", "other@example.test")
KEEPALIVE_RACE_SECONDS = 4.0  # replicas' gunicorn closes idle keep-alive connections after 5 s (brain/gunicorn_conf.py)
DROPPED_HEADERS = {"content-length", "connection", "accept-encoding", "user-agent"}  # the sender sets its own


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", type=int, default=2000, help="cases per interface (MCP, REST); default 2000")
    parser.add_argument("--clients", type=int, default=4, help="concurrent client threads (default 4)")
    parser.add_argument("--web-workers", type=int, default=2, help="web workers of the temporary server")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random, printed)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


@contextmanager
def _two_tenant_brain(web_workers: int, log: Path) -> Iterator[tuple[str, list[str]]]:
    """(url, [fuzzer token, other tenant's token]) of a fresh brain logging to `log`; stopped and removed
    afterwards (the log stays: it holds the traceback of any 5xx)."""
    with log.open("wb") as sink, served_brain(web_workers, sink) as (url, env):
        tokens = []
        for email in TENANTS:
            _brain("user", "create", "--email", email, env=env)
            tokens.append(_brain("token", "create", "--email", email, "--name", "fuzz", env=env))
        yield url, tokens


class Api:
    """JSON calls of one tenant, for seeding and fingerprinting (not fuzzed)."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.http = url, httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def rest(self, method: str, path: str, body: Any = None) -> Any:
        response = self.http.request(method, f"{self.url}/api/v1{path}", json=body)
        response.raise_for_status()
        return response.json()

    def rpc(self, path: str, method: str, params: dict[str, Any], session: str | None = None) -> httpx.Response:
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        if session:
            headers["Mcp-Session-Id"] = session
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return self.http.post(f"{self.url}{path}", json=body, headers=headers)

    def open_session(self, path: str) -> str:
        response = self.rpc(path, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": {"name": "fuzz", "version": "1"}})
        response.raise_for_status()
        return str(response.headers["Mcp-Session-Id"])

    def tools(self, path: str, session: str) -> dict[str, dict[str, Any]]:
        listed = self.rpc(path, "tools/list", {}, session).json()["result"]["tools"]
        return {tool["name"]: tool["inputSchema"] for tool in listed}


def _seed(api: Api, marker: str) -> tuple[list[str], list[str]]:
    """A rule, a session with an event, a spare token: (row ids, texts only this tenant may see)."""
    rule = api.rest("POST", "/knowledge", {"rule": f"Deploy with the {marker} checklist"})
    session = api.open_session("/mcp")
    started = api.rpc("/mcp", "tools/call", {"name": "brain_start_session", "arguments": {
        "prompt": f"ship the {marker} release"}}, session).json()["result"]["structuredContent"]
    api.rpc("/mcp", "tools/call", {"name": "brain_log_event", "arguments": {
        "sessionId": started["sessionId"], "eventType": "note", "payload": {"text": f"note {marker}"}}}, session)
    spare = api.rest("POST", "/tokens", {"label": "spare"})
    projects = [p["id"] for p in api.rest("GET", "/projects")["items"]]
    return [rule["id"], started["sessionId"], spare["id"], *projects], [marker]


def _fingerprint(api: Api, sessions: list[str]) -> Any:
    """What the other tenant sees of its own data; its MCP sessions must still answer."""
    views = {path: api.rest("GET", path) for path in ("/knowledge?limit=100", "/sessions?limit=100", "/projects",
                                                      "/peer-card", "/action-items")}
    alive = [api.rpc(path, "ping", {}, session).status_code for path, session in zip(PATHS, sessions, strict=True)]
    return {"views": views, "sessionsAlive": alive}


class Sender:
    """One client connection. A request that meets a connection the server closed after its keep-alive
    timeout (this sender sat idle while a large case was generated) is sent again on a fresh one, as any
    HTTP client does; those are counted as reconnects, not drops. Any other transport failure is a drop."""

    def __init__(self) -> None:
        self.http = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=1))
        self.idle_since = time.monotonic()
        self.reconnects = 0
        self.previous = "none"  # the last exchange on this connection, named when the next one is dropped

    def send(self, url: str, case: Any) -> tuple[int | None, str, bytes, float, str, str]:
        # Surrounding whitespace is not part of a field value on the wire (RFC 9110), and h11 refuses to send it.
        headers = [(k.encode("latin-1"), v.strip(" \t").encode("latin-1")) for k, v in case.headers.items()]
        idle = time.monotonic() - self.idle_since
        started = time.perf_counter()
        try:
            try:
                response = self.http.request(case.method, url + case.path, headers=headers, content=case.body or None)
            except httpx.RemoteProtocolError:
                if idle < KEEPALIVE_RACE_SECONDS:
                    raise
                self.reconnects += 1
                response = self.http.request(case.method, url + case.path, headers=headers, content=case.body or None)
            closed = "close" in response.headers.get("connection", "").lower()  # the next one opens a new connection
            self.previous = "none" if closed else f"{case.method} {case.path[:120]} -> {response.status_code}"
            return response.status_code, response.headers.get("content-type", ""), response.content, \
                time.perf_counter() - started, "", response.headers.get("location", "")
        except httpx.TransportError as exc:
            previous, self.previous = self.previous, "a dropped one"
            return None, "", b"", time.perf_counter() - started, f"{type(exc).__name__}: {exc} (idle {idle:.1f} s, " \
                f"{len(case.body)} bytes sent; previous on this connection: {previous})", ""
        finally:
            self.idle_since = time.monotonic()


def _drive(url: str, strategy: Any, cases: int, clients: int, seed: int, on_answer: Callable[..., None]) -> int:
    """Generates `cases` cases with hypothesis and sends them from `clients` threads as they come."""
    import warnings

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis.errors import HypothesisWarning

    warnings.simplefilter("ignore", HypothesisWarning)  # "overly large repr" of the huge cases: meant to be huge

    pending: queue.Queue[Any] = queue.Queue(maxsize=clients * 8)
    reconnects: list[int] = []

    def sender() -> None:
        client = Sender()
        with client.http:
            while (case := pending.get()) is not None:
                on_answer(case, *client.send(url, case))
        reconnects.append(client.reconnects)

    threads = [threading.Thread(target=sender, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()

    @with_seed(seed)
    @settings(max_examples=cases, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def generate(case: Any) -> None:
        pending.put(case)

    generate()
    for _ in threads:
        pending.put(None)
    for thread in threads:
        thread.join()
    return sum(reconnects)


def _schemathesis_cases(url: str, token: str) -> Any:
    """Schemathesis's positive and negative cases over the live OpenAPI document, as raw `HttpCase`s."""
    import requests
    import schemathesis
    from hypothesis import strategies as st
    from schemathesis import GenerationMode

    from brain.bench.fuzz_cases import HttpCase

    schema = schemathesis.openapi.from_url(f"{url}/api/v1/openapi.json")
    keep = {"method", "url", "headers", "params", "json", "data", "files", "cookies"}

    def raw(case: Any) -> HttpCase:
        kwargs = case.as_transport_kwargs(base_url=url, headers={"Authorization": f"Bearer {token}"})
        prepared = requests.Request(**{k: v for k, v in kwargs.items() if k in keep}).prepare()
        body = prepared.body.encode() if isinstance(prepared.body, str) else bytes(prepared.body or b"")  # type: ignore[arg-type]
        headers = {k: v if isinstance(v, str) else v.decode("latin-1") for k, v in prepared.headers.items()
                   if k.lower() not in DROPPED_HEADERS}
        return HttpCase(f"{case.method} {case.path}", str(prepared.method), str(prepared.url).removeprefix(url),
                        headers, body)

    return st.one_of(schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE)).map(raw)


class Run:
    """Tallies of one run, fed by the sender threads."""

    def __init__(self, secrets: list[str], quiet: bool) -> None:
        from brain.bench.fuzz_check import Tally

        self.tallies = {"mcp": Tally(), "rest": Tally()}
        self.secrets, self.quiet, self.lock = secrets, quiet, threading.Lock()

    def answer(self, interface: str, case: Any, status: int | None, content_type: str, body: bytes,
               seconds: float, transport_error: str, location: str) -> None:
        from brain.bench.fuzz_check import http_server_refusal, leaked, mcp_problem, rest_problem

        check = mcp_problem if interface == "mcp" else rest_problem
        problem = None if status is None else check(case.method, status, content_type, body)
        if problem and status is not None and 300 <= status < 400:
            problem += f" (to {location!r}, path {case.path[:80]!r})"
        leak = leaked(body, self.secrets, case.body + case.path.encode() + str(case.headers).encode())
        with self.lock:
            tally = self.tallies[interface]
            tally.add(status, problem or transport_error or None, seconds, case.label, leak,
                      refused=http_server_refusal(status, content_type))
            if not self.quiet and tally.cases % 1000 == 0:  # progress
                print(f"  {interface}: {tally.cases} cases, {tally.failures} failures", file=sys.stderr, flush=True)


def _targets(url: str, tokens: list[str]) -> tuple[Any, Api, list[str], list[str], list[str]]:
    """(MCP target, the other tenant's Api, its sessions, all row ids, the other tenant's secrets)."""
    import uuid

    from brain.bench.fuzz_cases import McpTarget

    own, other = Api(url, tokens[0]), Api(url, tokens[1])
    own_ids, _ = _seed(own, f"zq-own-{uuid.uuid4().hex[:10]}")
    other_ids, secrets = _seed(other, f"zq-secret-{uuid.uuid4().hex[:10]}")
    sessions = {path: own.open_session(path) for path in PATHS}
    other_sessions = [other.open_session(path) for path in PATHS]
    target = McpTarget(token=tokens[0], sessions=sessions, other_sessions=other_sessions, ids=own_ids + other_ids,
                       tools={path: own.tools(path, sessions[path]) for path in PATHS},
                       resources=[r["uri"] for r in own.rpc("/mcp", "resources/list", {}, sessions["/mcp"])
                                  .json()["result"]["resources"]])
    return target, other, other_sessions, own_ids + other_ids, [*secrets, tokens[1], *other_sessions, *other_ids]


def _fuzz(url: str, tokens: list[str], args: argparse.Namespace, seed: int) -> dict[str, Any]:
    from hypothesis import strategies as st

    from brain.bench.fuzz_cases import mcp_case, rest_case

    target, other, other_sessions, ids, secrets = _targets(url, tokens)
    before = _fingerprint(other, other_sessions)
    run = Run(secrets, quiet=False)  # progress goes to stderr, so --json output stays one object
    load = os.getloadavg()
    started = time.perf_counter()
    reconnects = {"mcp": _drive(url, mcp_case(target), args.cases, args.clients, seed,
                                lambda *a: run.answer("mcp", *a))}
    openapi = httpx.get(f"{url}/api/v1/openapi.json", timeout=60).json()
    raw = rest_case(openapi, tokens[0], ids)
    rest = st.one_of(raw, raw, _schemathesis_cases(url, tokens[0]))
    reconnects["rest"] = _drive(url, rest, args.cases, args.clients, seed, lambda *a: run.answer("rest", *a))
    after = _fingerprint(other, other_sessions)
    return {"seed": seed, "clients": args.clients, "seconds": round(time.perf_counter() - started, 1),
            "load": [round(x, 2) for x in load], "loadAfter": [round(x, 2) for x in os.getloadavg()],
            "otherTenantUnchanged": before == after, "otherSessionsAlive": after["sessionsAlive"] == [200, 200],
            **{name: {**tally.summary(), "reconnects": reconnects[name]} for name, tally in run.tallies.items()}}


def render(report: dict[str, Any]) -> str:
    lines = [f"{'interface':<9} {'cases':>7} {'5xx':>5} {'format':>7} {'dropped':>8} {'leaks':>6} "
             f"{'p50 ms':>8} {'p95 ms':>8} {'refused by the server (414/431)':>31}"]
    for name in ("mcp", "rest"):
        t = report[name]
        lines.append(f"{name:<9} {t['cases']:>7} {t['5xx']:>5} {t['nonFormat']:>7} {t['dropped']:>8} "
                     f"{t['leaks']:>6} {t['p50Ms']:>8.2f} {t['p95Ms']:>8.2f} {t['refusedByHttpServer']:>31}")
        lines += [f"    {example}" for example in t["examples"]]
    lines.append(f"other tenant unchanged: {report['otherTenantUnchanged']}, its MCP sessions alive: "
                 f"{report['otherSessionsAlive']}; seed {report['seed']}, {report['seconds']} s, "
                 f"load {report['load']} -> {report['loadAfter']}")
    return "\n".join(lines)


def failed(report: dict[str, Any]) -> bool:
    broken = sum(report[name][key] for name in ("mcp", "rest") for key in ("5xx", "nonFormat", "dropped", "leaks"))
    short = any(report[name]["cases"] < report["requested"] for name in ("mcp", "rest"))
    return bool(broken) or short or not report["otherTenantUnchanged"] or not report["otherSessionsAlive"]


def run(args: argparse.Namespace) -> int:
    try:
        import hypothesis  # noqa: F401
        import schemathesis  # noqa: F401
    except ImportError:
        print("brain bench fuzz needs the dev extras: pip install 'external-brain[dev]'", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    print(f"brain bench fuzz: {args.cases} cases per interface, seed {seed}; starting a temporary brain ...",
          file=sys.stderr, flush=True)
    log = Path(tempfile.mkstemp(prefix="brain-fuzz-", suffix=".log")[1])
    with _two_tenant_brain(args.web_workers, log) as (url, tokens):
        report = {"requested": args.cases, **_fuzz(url, tokens, args, seed)}
    if failed(report):
        report["serverLog"] = str(log)  # kept: the tracebacks of the failures
    else:
        log.unlink(missing_ok=True)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 1 if failed(report) else 0
