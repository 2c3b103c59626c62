"""`brain bench mcp`: tools/call latency and throughput of brain_list_projects over /mcp, both eras.

By default it starts its own `brain serve` (web only) on a temporary data dir and a free port, creates a
user and a token there, measures, and stops everything, so it runs on a clean checkout. Pass --url and
--token to measure a running brain instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx

from brain.bench.lean_http import Answer, LeanConnection
from brain.bench.mcp_paired import BLOCKS, Endpoint, Sample, paired, pooled, spread, warm_up_calls
from mcpgw import protocol as p

HELP = "benchmark MCP tools/call (brain_list_projects): p50/p95 and calls/s, both eras, --reference: vs the SDK"
MODERN = p.MODERN_VERSIONS[-1]
TOOL = "brain_list_projects"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="a running brain (default: start a temporary one)")
    parser.add_argument("--token", help="bearer token for --url (default $BRAIN_MCP_TOKEN)")
    parser.add_argument("--clients", type=_counts, default=[1, 8], help="concurrent clients, e.g. 1,8 (default)")
    parser.add_argument("--calls", type=int, default=2000, help="tools/call requests per era and client count")
    parser.add_argument("--era", choices=["both", "legacy", "modern"], default="both")
    parser.add_argument("--web-workers", type=int, default=2, help="web workers of the temporary server")
    parser.add_argument("--reference", action="store_true",
                        help="also measure the official MCP Python SDK server (one trivial tool, uvicorn) "
                             "in the same run, in turns with the brain, and print the ratio (handshake era)")
    parser.add_argument("--blocks", type=int, default=BLOCKS,
                        help=f"with --reference: turns each server takes per client count (default {BLOCKS})")
    parser.add_argument("--events", type=int, default=0,
                        help="also measure brain_log_event: this many events per client count, each client "
                             "writing to its own session; every acknowledged event is checked stored")
    parser.add_argument("--rate", type=_rates, default=[0.0],
                        help="with --events: pace the writes to this many events a second across the clients "
                             "(default: back to back); several, e.g. 200,300,400: a series at each, then the "
                             "highest at which every event had its vector within a second")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _counts(text: str) -> list[int]:
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("client counts are positive integers, e.g. 1,8")
    return counts


def _rates(text: str) -> list[float]:
    try:
        rates = list(dict.fromkeys(float(part) for part in text.split(",") if part.strip())) or [0.0]
    except ValueError:
        rates = [math.nan]
    if not all(math.isfinite(rate) for rate in rates):
        raise argparse.ArgumentTypeError("rates are events a second, e.g. 300 or 200,300,400")
    return rates


def _brain(*args: str, env: dict[str, str]) -> str:
    exe = shutil.which("brain", path=str(Path(sys.executable).parent)) or "brain"
    done = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"brain {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the web server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"the web server at {url} did not become ready within {timeout:.0f} s")


def stop_process(proc: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextmanager
def served_brain(web_workers: int, output: IO[bytes] | None = None) -> Iterator[tuple[str, dict[str, str]]]:
    """(url, env for `_brain`) of a fresh `brain serve` (web only) on a temp data dir, its output to `output`
    (discarded without one); stopped and removed afterwards."""
    data_dir = Path(tempfile.mkdtemp(prefix="brain-bench-"))
    port = free_port()
    env = {**os.environ, "BRAIN_DATA_DIR": str(data_dir), "BRAIN_PORT": str(port), "BRAIN_LOG_LEVEL": "WARNING"}
    env.pop("DATABASE_URL", None)
    exe = shutil.which("brain", path=str(Path(sys.executable).parent)) or "brain"
    proc = subprocess.Popen([exe, "serve", "--no-worker", "--web-workers", str(web_workers)], env=env,
                            stdout=output or subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        yield url, env
    finally:
        stop_process(proc, 60)
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def temporary_brain(web_workers: int) -> Iterator[tuple[str, str, str]]:
    """(url, token, data dir) of a fresh brain holding one user with five projects."""
    with served_brain(web_workers) as (url, env):
        _brain("user", "create", "--email", "bench@example.test", env=env)
        _brain("manage", "shell", "-c", "from projects.selectors.accounts import user_by_email; "
               "from projects.services.accounts import project_ensure_named as e; "
               "u=user_by_email(email='bench@example.test');"
               "[e(user=u, name=f'Bench {i}') for i in range(5)]", env=env)
        yield (url, _brain("token", "create", "--email", "bench@example.test", "--name", "bench", env=env),
               env["BRAIN_DATA_DIR"])


def _meta() -> dict[str, Any]:
    return {p.PROTOCOL_VERSION_META_KEY: MODERN, p.CLIENT_CAPABILITIES_META_KEY: {},
            p.CLIENT_INFO_META_KEY: {"name": "brain-bench", "version": "1"}}


async def rpc_post(http: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    # A server may close a keep-alive connection while it is idle; a request that raced such a close is sent
    # again on a fresh connection, as any HTTP client pool does (brain_list_projects is read-only).
    try:
        return await http.post(url, json=body, headers=headers)
    except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError):
        return await http.post(url, json=body, headers=headers)


async def rpc_open(http: httpx.AsyncClient, url: str, modern: bool) -> dict[str, str]:
    """Per-client headers for tools/call: a fresh legacy session, or the stateless headers."""
    if modern:
        return {p.VERSION_HEADER: MODERN, p.METHOD_HEADER: "tools/call", p.NAME_HEADER: TOOL}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": p.LATEST_LEGACY, "capabilities": {}, "clientInfo": {"name": "brain-bench", "version": "1"}}}
    response = await rpc_post(http, url, init, {})
    headers = {p.SESSION_HEADER: response.headers[p.SESSION_HEADER], p.VERSION_HEADER: p.LATEST_LEGACY}
    await rpc_post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    return headers


def bench_http(token: str, clients: int) -> httpx.AsyncClient:
    """The async HTTP client of `clients` concurrent MCP clients of one bearer token (a connection each)."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    auth = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return httpx.AsyncClient(headers=auth, limits=limits, timeout=60)


def tool_ok(response: httpx.Response | Answer) -> bool:
    """A tools/call answered with a result that is not an error."""
    return response.status_code == 200 and not response.json().get("result", {}).get("isError", True)


def lean_connection(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> LeanConnection:
    """A client's connection for its timed calls, with the bearer token of `http` and its session's `headers`."""
    return LeanConnection(url, {"Authorization": http.headers["authorization"], "Accept": http.headers["accept"],
                                **headers})


async def _client(http: httpx.AsyncClient, url: str, modern: bool, remaining: list[int],
                  latencies: list[float], errors: list[str]) -> None:
    headers = await rpc_open(http, url, modern)
    params: dict[str, Any] = {"name": TOOL, "arguments": {}}
    if modern:
        params["_meta"] = _meta()
    connection = lean_connection(http, url, headers)
    while remaining[0] > 0:
        remaining[0] -= 1
        body = {"jsonrpc": "2.0", "id": remaining[0], "method": "tools/call", "params": params}
        started = time.perf_counter()
        response = await connection.post(body)  # brain_list_projects is read-only: resent after a closed connection
        latencies.append(time.perf_counter() - started)
        if not tool_ok(response):
            errors.append(f"HTTP {response.status_code}: {response.body[:200]!r}")
    await connection.close()
    if not modern:
        await http.delete(url, headers=headers)


async def sample(url: str, token: str, *, modern: bool, clients: int, calls: int) -> Sample:
    """`calls` tools/call shared by `clients` concurrent clients, each on its own connection and session."""
    latencies: list[float] = []
    errors: list[str] = []
    async with bench_http(token, clients) as http:
        started = time.perf_counter()
        # Each client's share; the first `calls % clients` take one more, so the block makes exactly `calls`.
        await asyncio.gather(*[_client(http, url, modern, [calls // clients + (n < calls % clients)], latencies,
                                       errors) for n in range(clients)])
        elapsed = time.perf_counter() - started
    if errors:
        raise SystemExit(f"{len(errors)} calls failed, first: {errors[0]}")
    return Sample(latencies, elapsed)


async def measure(url: str, token: str, *, modern: bool, clients: int, calls: int) -> dict[str, float]:
    return pooled([await sample(url, token, modern=modern, clients=clients, calls=calls)])


async def _legacy_sample(endpoint: Endpoint, clients: int, calls: int) -> Sample:
    return await sample(endpoint.url, endpoint.token, modern=False, clients=clients, calls=calls)


def _row(clients: int, figures: dict[str, float], quiet: bool, label: str = "") -> dict[str, Any]:
    if not quiet:
        print(f"  {clients:>3} client(s){label}: calls={figures['calls']:.0f}  p50={figures['p50']:.2f} ms  "
              f"p95={figures['p95']:.2f} ms  p99={figures['p99']:.2f} ms  {figures['rate']:.0f} calls/s", flush=True)
    return {"clients": clients, **{k: round(v, 2) for k, v in figures.items()}}


def _series(url: str, token: str, args: argparse.Namespace, modern: bool) -> list[dict[str, Any]]:
    rows = []
    for clients in args.clients:
        asyncio.run(measure(url, token, modern=modern, clients=clients, calls=warm_up_calls(clients)))
        figures = asyncio.run(measure(url, token, modern=modern, clients=clients, calls=args.calls))
        rows.append(_row(clients, figures, args.json))
    return rows


def _heading(era: str, args: argparse.Namespace) -> None:
    if not args.json:
        print(f"brain, {era} era ({p.LATEST_LEGACY if era == 'legacy' else MODERN}), {TOOL}:", flush=True)


def _measure_brain(url: str, token: str, args: argparse.Namespace, eras: list[str]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for era in eras:
        _heading(era, args)
        report[era] = _series(f"{url}/mcp", token, args, era == "modern")
    return report


def _measure_paired(url: str, token: str, args: argparse.Namespace) -> tuple[list[Any], list[Any], list[Any]]:
    """The brain's handshake-era series and the reference's, in turns (`brain.bench.mcp_paired`), and the spread
    of their per-block p50 ratios."""
    from brain.bench.mcp_reference import reference_python, reference_server

    python = reference_python()
    ours, theirs, spreads = [], [], []
    with reference_server(free_port(), python) as reference_url:
        if not args.json:
            print(f"brain, legacy era ({p.LATEST_LEGACY}), {TOOL}, in {args.blocks} turns each with the reference (MCP "
                  "Python SDK MCPServer under uvicorn, one trivial tool, handshake era):", flush=True)
        for clients in args.clients:
            brain_figures, reference_figures, block_ratios = paired(
                _legacy_sample, Endpoint(f"{url}/mcp", token), Endpoint(reference_url, "none"), clients=clients,
                calls=args.calls, blocks=args.blocks)
            ours.append(_row(clients, brain_figures, args.json, " brain    "))
            theirs.append(_row(clients, reference_figures, args.json, " reference"))
            spreads.append(spread(block_ratios))
    return ours, theirs, spreads


def ratios(brain: list[dict[str, Any]], reference: list[dict[str, Any]],
           spreads: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """ours / reference per client count: > 1 means we are slower (p50) or faster (rate); with `spreads`, each
    count's lowest, median and highest per-block p50 ratio as `p50Blocks`."""
    rows = [{"clients": ours["clients"], "p50": round(ours["p50"] / ref["p50"], 2),
             "p95": round(ours["p95"] / ref["p95"], 2), "rate": round(ours["rate"] / ref["rate"], 2)}
            for ours, ref in zip(brain, reference, strict=True)]
    for row, blocks in zip(rows, spreads or [], strict=False):
        row["p50Blocks"] = blocks
    return rows


def render_side_by_side(brain: list[dict[str, Any]], reference: list[dict[str, Any]],
                        spreads: list[dict[str, Any]] | None = None) -> str:
    lines = ["", f"{'clients':>7} | {'brain p50/p95 ms':>17} {'calls/s':>8} | {'reference p50/p95 ms':>21} "
             f"{'calls/s':>8} | {'p50 ratio':>9} {'rate ratio':>10}{' | blocks min-max' if spreads else ''}"]
    for ratio, ours, ref in zip(ratios(brain, reference, spreads), brain, reference, strict=True):
        blocks = ratio.get("p50Blocks")
        lines.append(f"{ours['clients']:>7} | {ours['p50']:>8.2f}/{ours['p95']:<8.2f} {ours['rate']:>8.0f} | "
                     f"{ref['p50']:>12.2f}/{ref['p95']:<8.2f} {ref['rate']:>8.0f} | {ratio['p50']:>8.2f}x "
                     f"{ratio['rate']:>9.2f}x" + (f" | {blocks['min']:.2f}-{blocks['max']:.2f}x" if blocks else ""))
    return "\n".join(lines)


def _report(url: str, token: str, args: argparse.Namespace, data_dir: str = "") -> dict[str, Any]:
    if not args.json:
        print(f"brain bench mcp: {args.calls} tools/call {TOOL} per series, {url}/mcp", flush=True)
    report: dict[str, Any] = {"tool": TOOL, "calls": args.calls, "load": os.getloadavg()}
    eras = {"both": ["legacy", "modern"], "legacy": ["legacy"], "modern": ["modern"]}[args.era]
    if args.reference:  # the handshake era in turns with the reference; a modern series after, alone
        legacy, report["reference"], spreads = _measure_paired(url, token, args)
        report["brain"] = {"legacy": legacy, **_measure_brain(url, token, args, [e for e in eras if e != "legacy"])}
        report["ratio"] = ratios(legacy, report["reference"], spreads)
        if not args.json:
            print(render_side_by_side(legacy, report["reference"], spreads))
    else:
        report["brain"] = _measure_brain(url, token, args, eras)
    # Last: the writes leave the server embedding their vectors for a while, which would slow the reference.
    if args.events:
        from brain.bench.mcp_events import events_series, paced_text, vector_watch, within_a_second

        if not args.json:
            print(f"brain, handshake era, brain_log_event ({args.events} events per series"
                  f"{paced_text(args.rate)}):", flush=True)
        pending = vector_watch(data_dir)
        try:
            report["events"] = events_series(url, token, clients=args.clients, events=args.events, quiet=args.json,
                                             rates=args.rate, pending=pending)
            if pending is not None and len(args.rate) > 1:
                report["vectorsWithinASecond"] = within_a_second(report["events"], quiet=args.json)
        finally:
            if pending is not None:  # its connection would otherwise hold a backend until the process exits
                pending.close()
    report["loadAfter"] = os.getloadavg()
    if args.json:
        print(json.dumps(report, indent=2))
    return report


def run(args: argparse.Namespace) -> int:
    if args.events < 0 or args.calls < 1 or min(args.rate) < 0 or args.blocks < 1:
        print("brain bench mcp: --calls and --blocks must be at least 1, --events and --rate at least 0",
              file=sys.stderr)
        return 2
    if args.url:
        token = args.token or os.environ.get("BRAIN_MCP_TOKEN", "")
        if not token:
            print("brain bench mcp: --url needs --token or BRAIN_MCP_TOKEN", file=sys.stderr)
            return 2
        _report(args.url.rstrip("/").removesuffix("/mcp"), token, args)
        return 0
    print("brain bench mcp: starting a temporary brain (web only) ...", file=sys.stderr, flush=True)
    with temporary_brain(args.web_workers) as (url, token, data_dir):
        _report(url, token, args, data_dir)
    return 0
