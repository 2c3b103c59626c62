"""`brain bench tools`: p50/p95 of brain_start_session (with a prompt) and brain_report_session_outcome
over real HTTP /mcp, N concurrent clients, against a knowledge table of a given size.

Knowledge rows come from real rule files (awesome_cursorrules.jsonl) loaded with COPY the same way as
`brain bench retrieval-scale` (one embedding per distinct rule, noisy copies), then the HNSW and GIN
indexes are built. A WSGI server with a fixed pool of N worker threads in this process serves /mcp;
each client thread opens its own MCP session (handshake era) with the bench user's token and repeats:
start a session with a prompt cut from a real rule -> report the outcome with the injected ids and one
learning. The bench user and
everything it owns are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx
import numpy as np

from brain.bench.lme import percentile
from brain.bench.scale import DEFAULT_CORPUS, _load, rules_of

HNSW_SQL = ("CREATE INDEX IF NOT EXISTS knowledge_embedding_hnsw ON knowledge_knowledgeitem USING hnsw "
            "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
GIN_SQL = "CREATE INDEX IF NOT EXISTS knowledge_search_gin ON knowledge_knowledgeitem USING gin (search_vector)"
HELP = "measure p50/p95 of brain_start_session and brain_report_session_outcome over /mcp under load"
MCP_VERSION = "2025-11-25"


class _PooledServer(WSGIServer):
    """A fixed pool of worker threads (like a threaded app server): each keeps its database connection."""

    pool: ThreadPoolExecutor

    def process_request(self, request: Any, client_address: Any) -> None:
        self.pool.submit(self._handle, request, client_address)

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # a broken request must not kill the worker thread
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def _restore_indexes() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(HNSW_SQL)
        cursor.execute(GIN_SQL)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--items", type=int, default=100_000, help="knowledge rows in the table")
    parser.add_argument("--clients", type=int, default=20, help="concurrent MCP clients")
    parser.add_argument("--rounds", type=int, default=10, help="start+report pairs per client")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="awesome_cursorrules.jsonl")
    parser.add_argument("--rules", type=int, default=1000, help="distinct rules embedded (rows cycle through them)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=int, default=11)


class McpClient:
    """One MCP client session over HTTP (initialize, then tools/call with the session id)."""

    def __init__(self, base: str, raw_token: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=120.0, headers={
            "Authorization": f"Bearer {raw_token}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"})
        self.ids = 0
        init = self._post("initialize", {"protocolVersion": MCP_VERSION, "capabilities": {},
                                         "clientInfo": {"name": "brain-bench", "version": "1"}})
        self.session = init.headers["Mcp-Session-Id"]
        self.http.headers.update({"Mcp-Session-Id": self.session, "MCP-Protocol-Version": MCP_VERSION})
        self.http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _post(self, method: str, params: dict[str, Any]) -> httpx.Response:
        self.ids += 1
        response = self.http.post("/mcp", json={"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        response.raise_for_status()
        return response

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        result = self._post("tools/call", {"name": name, "arguments": arguments}).json()["result"]
        elapsed = (time.perf_counter() - start) * 1000
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result['content'][0]['text']}")
        return result["structuredContent"], elapsed


def _client_loop(base: str, raw: str, prompts: list[str], out: dict[str, list[float]], stats: dict[str, int],
                 lock: threading.Lock) -> None:
    client = McpClient(base, raw)
    for prompt in prompts:
        started, t_start = client.call("brain_start_session", {"clientType": "bench", "prompt": prompt})
        used = (started.get("relevantKnowledge") or {}).get("knowledgeIds", [])
        learning = {"trigger": "benchmarking the brain", "rule": f"prefer measured figures: {prompt[:60]}",
                    "rationale": "bench", "type": "heuristic"}
        _, t_report = client.call("brain_report_session_outcome", {
            "sessionId": started["sessionId"], "success": True, "userFeedback": "up", "filesModified": 1,
            "knowledgeUsed": used, "learnings": [learning]})
        with lock:
            out["start"].append(t_start)
            out["report"].append(t_report)
            stats["injected"] += len(used)
            stats["starts_with_injection"] += 1 if used else 0


def _load_rows(user: Any, project: Any, rules: list[str], count: int, seed: int) -> dict[str, float]:
    from django.db import connection

    from knowledge.embeddings import embed_texts

    start = time.perf_counter()
    vectors, model = embed_texts(rules)
    embed_s = time.perf_counter() - start
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS knowledge_embedding_hnsw")
        cursor.execute("DROP INDEX IF EXISTS knowledge_search_gin")
        start = time.perf_counter()
        _load(cursor.cursor, user.id, project.id, rules, np.array(vectors, dtype=np.float32), count, model, seed)
        load_s = time.perf_counter() - start
        cursor.execute("SET maintenance_work_mem = '1GB'")
        start = time.perf_counter()
        cursor.execute(HNSW_SQL)
        cursor.execute(GIN_SQL)
        index_s = time.perf_counter() - start
        cursor.execute("ANALYZE knowledge_knowledgeitem")
    return {"embed_s": round(embed_s, 1), "load_s": round(load_s, 1), "index_s": round(index_s, 1)}


def _summary(times: list[float]) -> dict[str, Any]:
    times = sorted(times)
    return {"n": len(times), "p50": percentile(times, 50), "p95": percentile(times, 95),
            "mean": round(statistics.fmean(times), 1) if times else None}


def _close_worker_connections(pool: ThreadPoolExecutor, workers: int) -> None:
    """Closes each worker thread's database connection: one task per thread, held apart by a barrier."""
    from django.db import connections

    barrier = threading.Barrier(workers)

    def close() -> None:
        connections.close_all()
        barrier.wait(timeout=30)

    for future in [pool.submit(close) for _ in range(workers)]:
        future.result()


def _drive(args: argparse.Namespace, raw: str, rules: list[str]) -> tuple[dict[str, Any], float]:
    from django.core.handlers.wsgi import WSGIHandler

    server = make_server("127.0.0.1", 0, WSGIHandler(), server_class=_PooledServer, handler_class=_QuietHandler)
    server.pool = ThreadPoolExecutor(max_workers=args.clients, thread_name_prefix="bench-web")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    pick = random.Random(args.seed)
    McpClient(base, raw).call("brain_start_session", {"prompt": rules[0][:80]})  # warm the model and caches
    out: dict[str, list[float]] = {"start": [], "report": []}
    stats = {"injected": 0, "starts_with_injection": 0}
    lock = threading.Lock()
    threads = [
        threading.Thread(target=_client_loop, args=(
            base, raw, [" ".join(pick.choice(rules).split()[:12]) for _ in range(args.rounds)], out, stats, lock))
        for _ in range(args.clients)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    server.shutdown()
    _close_worker_connections(server.pool, args.clients)
    server.pool.shutdown(wait=True)
    result = {"brain_start_session": _summary(out["start"]), "brain_report_session_outcome": _summary(out["report"]),
              **stats}
    return result, wall


def run(args: argparse.Namespace) -> int:
    from projects.services.accounts import project_ensure_named, token_create, user_create

    if not args.corpus.is_file() or args.items < 0 or args.clients < 1 or args.rounds < 1:
        print(f"brain: need --corpus FILE (got {args.corpus}), --items >= 0, --clients and --rounds >= 1",
              file=sys.stderr)
        return 2
    rules = rules_of(args.corpus)
    random.Random(args.seed).shuffle(rules)
    rules = rules[: max(1, args.rules)]
    user = user_create(email=f"tools-{uuid.uuid4().hex[:10]}@bench.invalid")
    project, _ = project_ensure_named(user=user, name="tools bench")
    _, raw = token_create(user=user, label="bench")
    logging.disable(logging.INFO)  # one op= line per call would drown the figures
    try:
        setup = _load_rows(user, project, rules, args.items, args.seed)
        print(f"loaded {args.items} knowledge rows {setup}", file=sys.stderr)
        latency, wall = _drive(args, raw, rules)
    finally:
        logging.disable(logging.NOTSET)
        user.delete()
        _restore_indexes()
    pairs = args.clients * args.rounds
    report = {"items": args.items, "clients": args.clients, "rounds": args.rounds, "setup": setup,
              "wall_s": round(wall, 1), "pairs_per_s": round(pairs / wall, 1), **latency}
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    lines = [f"{report['items']} knowledge rows, {report['clients']} concurrent MCP clients x {report['rounds']} "
             f"rounds ({report['pairs_per_s']} start+report pairs/s, setup {report['setup']})", "",
             f"{'tool':<32} {'n':>5} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}"]
    for name in ("brain_start_session", "brain_report_session_outcome"):
        row = report[name]
        lines.append(f"{name:<32} {row['n']:>5} {row['p50']:>9} {row['p95']:>9} {row['mean']:>9}")
    total = report["clients"] * report["rounds"]
    lines.append(f"starts with injected knowledge: {report['starts_with_injection']}/{total}")
    return "\n".join(lines)
