"""`brain bench tools`: p50/p95 of brain_start_session (with a prompt), brain_log_event, brain_list_projects and
brain_report_session_outcome over real HTTP /mcp, N concurrent clients, against a knowledge table of a given size.

Knowledge rows come from real rule files (awesome_cursorrules.jsonl) loaded with COPY the same way as
`brain bench retrieval-scale` (one embedding per distinct rule, noisy copies), then the HNSW and GIN
indexes are built. The product's own web server serves /mcp as `brain serve` starts it (granian, its vector
batchers in its workers), on this process's database. Each client opens its own MCP session (handshake era)
with the bench user's token on one kept-alive connection (`brain.bench.lean_http`, as `brain bench mcp` measures)
and repeats: start a session with a prompt cut from a real rule, log events, list projects, report the outcome
with the injected ids and one learning. The bench user and everything it owns are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from brain.bench.bench_users import bench_user
from brain.bench.lean_http import LeanConnection
from brain.bench.lme import percentile
from brain.bench.mcp_load import bench_http, free_port, lean_connection, rpc_open, stop_process, wait_ready
from brain.bench.scale import (
    DEFAULT_CORPUS,
    GIN_INDEX,
    HNSW_INDEX,
    _load,
    _restore_indexes,
    cache_warm,
    declared_index_sql,
    gin_pending,
    rules_of,
)
from brain.config import runtime_config
from brain.db_url import connection_url
from brain.serve import PACKAGES_DIR, children_env, web_server_args

HELP = "p50/p95 of session start, log, list and report over /mcp, served as brain serve serves it, under load"
LOGS_PER_ROUND = 3
TOOLS = ("brain_start_session", "brain_log_event", "brain_list_projects", "brain_report_session_outcome")
KEYS = {"brain_start_session": "start", "brain_log_event": "log", "brain_list_projects": "list",
        "brain_report_session_outcome": "report"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--items", type=int, default=100_000, help="knowledge rows in the table")
    parser.add_argument("--clients", type=_counts, default=[1, 8], help="concurrent MCP clients, e.g. 1,8 (default)")
    parser.add_argument("--rounds", type=int, default=10, help="start+report pairs per client")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="awesome_cursorrules.jsonl")
    parser.add_argument("--rules", type=int, default=1000, help="distinct rules embedded (rows cycle through them)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--web-workers", type=int, default=2, help="web server processes (brain serve's default)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--other-rows", type=int, default=0,
                        help="rows of other projects in the same table (a brain of many projects; default 0)")
    parser.add_argument("--other-projects", type=int, default=300, help="how many projects hold --other-rows")
    parser.add_argument("--written", type=int, default=0,
                        help="more rows written through the built indexes, as a live brain's writes since its last "
                             "vacuum reach them (default 0: a freshly built table)")


def _counts(text: str) -> list[int]:
    counts = [int(part) for part in text.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("client counts are positive integers, e.g. 1,8")
    return counts


async def _call(connection: LeanConnection, name: str, arguments: dict[str, Any], *,
                read_only: bool = False) -> tuple[dict[str, Any], float]:
    """One timed tools/call; a write is never sent twice (only a read is resent after a dropped connection)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    started = time.perf_counter()
    answer = await connection.post(body, resend=read_only)
    elapsed = (time.perf_counter() - started) * 1000
    result = answer.json().get("result") if answer.status_code == 200 else None
    if not result or result.get("isError"):
        raise RuntimeError(f"{name} failed: HTTP {answer.status_code} {answer.body[:300]!r}")
    return result["structuredContent"], elapsed


async def _round(connection: LeanConnection, prompt: str, out: dict[str, list[float]], stats: dict[str, int]) -> None:
    """start with a prompt, LOGS_PER_ROUND events, list, report with the injected ids and one learning."""
    started, t_start = await _call(connection, "brain_start_session", {"clientType": "bench", "prompt": prompt})
    used = (started.get("relevantKnowledge") or {}).get("knowledgeIds", [])
    logged = [await _call(connection, "brain_log_event", {"sessionId": started["sessionId"], "eventType": "note",
                                                          "payload": {"text": f"step {n}: {prompt[:80]}"}})
              for n in range(LOGS_PER_ROUND)]
    _, t_list = await _call(connection, "brain_list_projects", {}, read_only=True)
    learning = {"trigger": "benchmarking the brain", "rule": f"prefer measured figures: {prompt[:60]}",
                "rationale": "bench", "type": "heuristic"}
    _, t_report = await _call(connection, "brain_report_session_outcome", {
        "sessionId": started["sessionId"], "success": True, "userFeedback": "up", "filesModified": 1,
        "knowledgeUsed": used, "learnings": [learning]})
    out["start"].append(t_start)
    out["report"].append(t_report)
    out["log"].extend(elapsed for _, elapsed in logged)
    out["list"].append(t_list)
    stats["events"] += len(logged)
    stats["injected"] += len(used)
    stats["starts_with_injection"] += 1 if used else 0


async def _client(url: str, raw: str, prompts: list[str], out: dict[str, list[float]], stats: dict[str, int],
                  ready: asyncio.Barrier) -> None:
    """One MCP client (handshake era) on its own kept-alive connection: a warm-up open, then its rounds, started
    with every other client's."""
    async with bench_http(raw, 1) as http:
        try:
            headers = await rpc_open(http, url, False)
            connection = lean_connection(http, url, headers)
            await _call(connection, "brain_start_session", {"prompt": prompts[0][:80]})  # the worker's model, caches
        except BaseException:
            await ready.abort()  # the other clients and the clock stop waiting for this one
            raise
        await ready.wait()
        for prompt in prompts:
            await _round(connection, prompt, out, stats)
        await connection.close()
        await http.delete(url, headers=headers)


def _other_projects(owner: Any, args: argparse.Namespace) -> list[tuple[Any, Any, int]]:
    """(owner id, project, rows) for `--other-rows` spread evenly over `--other-projects` projects of another user,
    whose rows share the table and its indexes with the bench user's and never its scope."""
    from projects.services.accounts import project_ensure_named

    count = max(1, min(args.other_projects, args.other_rows))
    share, extra = divmod(args.other_rows, count)
    return [(owner.id, project_ensure_named(user=owner, name=f"other {n}")[0], share + (1 if n < extra else 0))
            for n in range(count)]


@contextmanager
def _other_owner(args: argparse.Namespace) -> Iterator[Any]:
    """The owner of `--other-rows` (a bench user of its own, removed with them), or None without any."""
    if args.other_rows <= 0:
        yield None
        return
    with bench_user("tools-others") as owner:
        yield owner


def _load_rows(user: Any, project: Any, rules: list[str], count: int, seed: int,
               others: Sequence[tuple[Any, Any, int]] = (), *, written: int = 0) -> dict[str, Any]:
    from django.db import connection

    from knowledge.embeddings import embed_texts

    start = time.perf_counter()
    vectors, model = embed_texts(rules)
    embed_s = time.perf_counter() - start
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        cursor.execute(f"DROP INDEX IF EXISTS {GIN_INDEX}")
        start = time.perf_counter()
        matrix = np.array(vectors, dtype=np.float32)
        _load(cursor.cursor, user.id, project.id, rules, matrix, count, model, seed)
        for n, (owner_id, other, rows) in enumerate(others, start=1):
            _load(cursor.cursor, owner_id, other.id, rules, matrix, rows, model, seed + n)
        load_s = time.perf_counter() - start
        cursor.execute("SET maintenance_work_mem = '1GB'")
        start = time.perf_counter()
        cursor.execute(declared_index_sql(HNSW_INDEX))
        cursor.execute(declared_index_sql(GIN_INDEX))
        index_s = time.perf_counter() - start
        # As autovacuum leaves a table soon after a bulk write: its pages marked all-visible, so an index-only scan
        # (an exact vector list's candidates, knowledge/search_vector.py) need not read them.
        cursor.execute("VACUUM (ANALYZE) knowledge_knowledgeitem")
        after: dict[str, Any] = {}
        if written:  # through the built indexes, as a live brain's writes since its last vacuum reach them
            start = time.perf_counter()
            _load(cursor.cursor, user.id, project.id, rules, matrix, written, model, seed + len(others) + 1)
            after = {"written_s": round(time.perf_counter() - start, 1), "gin_pending": gin_pending(cursor, GIN_INDEX)}
            cursor.execute("ANALYZE knowledge_knowledgeitem")
        cached = cache_warm(cursor)
    return {"embed_s": round(embed_s, 1), "load_s": round(load_s, 1), "index_s": round(index_s, 1), **after,
            "cached": cached}


def _summary(times: list[float]) -> dict[str, Any]:
    times = sorted(times)
    return {"n": len(times), "p50": percentile(times, 50), "p95": percentile(times, 95),
            "mean": round(statistics.fmean(times), 1) if times else None}


@contextmanager
def product_server(workers: int) -> Iterator[str]:
    """The /mcp URL of granian serving the app as `brain serve` starts it (`workers` processes), on a free port and
    on this process's database; its output goes to a temporary file, shown when it fails to start."""
    port = free_port()
    env = {**children_env(runtime_config()), "DATABASE_URL": connection_url(), "BRAIN_LOG_LEVEL": "WARNING"}
    argv = [sys.executable, "-m", "granian", *web_server_args("127.0.0.1", port, workers)]
    with tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(argv, env=env, cwd=PACKAGES_DIR, stdout=output, stderr=subprocess.STDOUT)
        try:
            wait_ready(f"http://127.0.0.1:{port}", proc)
            yield f"http://127.0.0.1:{port}/mcp"
        except SystemExit:
            output.seek(0)
            print(output.read().decode(errors="replace")[-2000:], file=sys.stderr)
            raise
        finally:
            stop_process(proc, 30)


def _drive(url: str, args: argparse.Namespace, clients: int, raw: str,
           rules: list[str]) -> tuple[dict[str, Any], float]:
    pick = random.Random(args.seed)
    prompts = [[" ".join(pick.choice(rules).split()[:12]) for _ in range(args.rounds)] for _ in range(clients)]
    out: dict[str, list[float]] = {"start": [], "report": [], "log": [], "list": []}
    stats = {"injected": 0, "starts_with_injection": 0, "events": 0}

    async def drive() -> float:
        ready = asyncio.Barrier(clients + 1)
        tasks = [asyncio.create_task(_client(url, raw, mine, out, stats, ready)) for mine in prompts]
        try:
            await ready.wait()
        except asyncio.BrokenBarrierError:
            await asyncio.gather(*tasks)  # raises the failed client's own error
            raise
        start = time.perf_counter()
        await asyncio.gather(*tasks)
        return time.perf_counter() - start

    wall = asyncio.run(drive())
    result = {name: _summary(out[KEYS[name]]) for name in TOOLS}
    return {**result, **stats, "eventsPerSecond": round(stats["events"] / wall, 1)}, wall


HOST_SAMPLES = 200


def host_speed(rules: Sequence[str]) -> dict[str, float | None]:
    """How fast this host is just before the runs, so figures from different days and hosts can be read together
    (the same code's open at 100,000 rows went from 14.8 to 19.8 ms p50 between two server starts an hour apart,
    docs/benchmarks.md, issue 17, thirty-sixth pass): the p50 of one twelve-word prompt through the local model with
    nothing else running, and of a PostgreSQL round trip (`SELECT 1` on the driver's own cursor, without Django's
    layers). The model's is None when the local model is not the one in use: a paid API is not called for this."""
    from django.db import connection

    from knowledge.embeddings import EmbeddingUnavailable, LocalEmbedder, get_embedder

    model_ms: float | None = None
    try:
        embedder = get_embedder()
    except EmbeddingUnavailable:
        embedder = None
    if isinstance(embedder, LocalEmbedder):
        timed = []
        for n in range(HOST_SAMPLES):
            prompt = " ".join(rules[n % len(rules)].split()[:12]) + f" {n}"
            started = time.perf_counter()
            embedder.embed([prompt])
            timed.append((time.perf_counter() - started) * 1000)
        model_ms = percentile(sorted(timed), 50)
    trips = []
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        for _ in range(5 * HOST_SAMPLES):
            started = time.perf_counter()
            cursor.execute("SELECT 1")
            cursor.fetchone()
            trips.append((time.perf_counter() - started) * 1e6)
    return {"modelMs": model_ms, "roundTripUs": round(percentile(sorted(trips), 50) or 0)}


def run(args: argparse.Namespace) -> int:
    from projects.services.accounts import project_ensure_named, token_create

    if (not args.corpus.is_file() or args.items < 0 or args.rounds < 1 or args.other_rows < 0 or args.written < 0
            or args.other_projects < 1):
        print(f"brain: need --corpus FILE (got {args.corpus}), --items >= 0, --clients and --rounds >= 1, "
              "--other-rows and --written >= 0, --other-projects >= 1", file=sys.stderr)
        return 2
    rules = rules_of(args.corpus)
    random.Random(args.seed).shuffle(rules)
    rules = rules[: max(1, args.rules)]
    logging.disable(logging.INFO)  # one op= line per call would drown the figures
    try:
        with bench_user("tools") as user, _other_owner(args) as other_owner:
            project, _ = project_ensure_named(user=user, name="tools bench")
            _, raw = token_create(user=user, label="bench")
            others = _other_projects(other_owner, args) if other_owner is not None else []
            setup = _load_rows(user, project, rules, args.items, args.seed, others, written=args.written)
            print(f"loaded {args.items} knowledge rows (and {args.written} written after the indexes) and "
                  f"{args.other_rows} of {len(others)} other projects {setup}",
                  file=sys.stderr)
            host = host_speed(rules)
            runs: list[dict[str, Any]] = []
            with product_server(args.web_workers) as url:
                for clients in args.clients:
                    runs.append(_run(url, args, clients, raw, rules, user.id, runs))
    finally:
        logging.disable(logging.NOTSET)
        _restore_indexes()
    report = {"items": args.items, "written": args.written, "otherRows": args.other_rows, "otherProjects": len(others),
              "rounds": args.rounds,
              "server": f"granian, {args.web_workers} workers",
              "setup": setup, "host": host, "load": os.getloadavg(), "runs": runs}
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def _run(url: str, args: argparse.Namespace, clients: int, raw: str, rules: list[str], user_id: Any,
         earlier: list[dict[str, Any]]) -> dict[str, Any]:
    from sessions.models import SessionEvent

    latency, wall = _drive(url, args, clients, raw, rules)
    # Every acknowledged event must be in the table (vectors may still be on their way).
    stored = SessionEvent.objects.filter(user_id=user_id, event_type="note").count()
    latency["eventsStored"] = stored - sum(run["events"] for run in earlier)
    return {"clients": clients, "wall_s": round(wall, 1), "pairs_per_s": round(clients * args.rounds / wall, 1),
            **latency}


def render(report: dict[str, Any]) -> str:
    others = f" (and {report['otherRows']} of {report['otherProjects']} other projects)" if report["otherRows"] else ""
    written = f" ({report['written']} of them written after the indexes were built)" if report["written"] else ""
    lines = [f"{report['items'] + report['written']} knowledge rows{written}{others}, {report['rounds']} rounds per "
             "client (start with a prompt, "
             f"{LOGS_PER_ROUND} x log, list, report), served by {report['server']}, setup {report['setup']}, "
             f"load {report['load']}",
             f"host before the runs: a twelve-word prompt through the model {report['host']['modelMs']} ms p50, "
             f"a PostgreSQL round trip {report['host']['roundTripUs']} µs p50"]
    for run in report["runs"]:
        lines += ["", f"{run['clients']} concurrent MCP client(s): {run['pairs_per_s']} sessions/s, "
                  f"{run['eventsPerSecond']} events/s",
                  f"{'tool':<32} {'n':>5} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}"]
        for name in TOOLS:
            row = run[name]
            lines.append(f"{name:<32} {row['n']:>5} {row['p50']:>9} {row['p95']:>9} {row['mean']:>9}")
        total = run["clients"] * report["rounds"]
        lines.append(f"starts with injected knowledge: {run['starts_with_injection']}/{total}; events acknowledged "
                     f"{run['events']}, stored {run['eventsStored']}")
    return "\n".join(lines)
