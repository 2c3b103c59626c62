"""`brain bench cluster`: the deploy/ topology on this machine, agents over MCP, faults mid-run, a ledger check.

Starts PostgreSQL (TCP), its own Redis, N gunicorn replicas behind HAProxy (round robin), N Celery workers
and one beat (brain/bench/cluster_procs.py); drives simulated agents (brain/bench/cluster_agents.py);
with --faults kills a replica, kills a worker, restarts PostgreSQL and stops Redis, each fault followed by
the component coming back (as compose's `restart:` or Kubernetes would bring it). At the end it waits for
the jobs queued by the closes, then checks every acknowledged write against the database: lost (missing)
and duplicated (a marker stored twice). Figures: throughput per replica, p50/p95 per tool, errors by fault,
recovery after each fault (first good probe after the last failed one).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from brain.bench.cluster_agents import Agent, Ledger, probe
from brain.bench.cluster_procs import Topology, _brain_exe
from brain.bench.cluster_report import Fault, render, summarise

HELP = "run web replicas behind HAProxy, workers, beat, PostgreSQL and Redis; agents over MCP; faults; check writes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--web", type=int, default=2, help="gunicorn web replicas behind the balancer")
    parser.add_argument("--workers", type=int, default=1, help="Celery workers (plus exactly one beat)")
    parser.add_argument("--agents", type=int, default=8, help="simulated agents (even: handshake era, odd: stateless)")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long the agents work")
    parser.add_argument("--faults", action="store_true", help="kill a replica, kill a worker, restart PostgreSQL, "
                        "stop Redis, during the run")
    parser.add_argument("--redis-down-s", type=float, default=30.0, help="how long Redis stays stopped")
    parser.add_argument("--web-threads", type=int, default=4, help="threads per gunicorn worker (2 workers each)")
    parser.add_argument("--jobs-wait-s", type=float, default=600.0, help="how long to wait for queued jobs at the "
                        "end (40 agents for 5 minutes queue about 3000 jobs; one worker drains them in minutes)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs) afterwards")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _setup_token(env: dict[str, str]) -> str:
    import subprocess

    def brain(*args: str) -> str:
        done = subprocess.run([_brain_exe(), *args], env=env, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise SystemExit(f"brain {' '.join(args)} failed: {done.stderr.strip()[-500:]}")
        return done.stdout.strip()

    # One Django start instead of three CLI runs; the second user is the tenant that must see nothing.
    return brain("manage", "shell", "-c", "from projects.services.accounts import token_create, user_create; "
                 "user_create(email='other-tenant@bench.invalid'); "
                 "print(token_create(user=user_create(email='cluster@bench.invalid'), label='cluster-bench')[1])"
                 ).splitlines()[-1]


def _schedule(duration: float, redis_down: float) -> list[tuple[str, float]]:
    """Fault start times, spread over the run; Redis last so its outage ends before the agents stop."""
    redis_at = max(duration * 0.55, 5.0)
    return [("kill web replica", duration * 0.12), ("kill worker", duration * 0.25),
            ("restart postgresql", duration * 0.4), ("stop redis", min(redis_at, duration - redis_down - 5))]


def _inject(topo: Topology, name: str, redis_down: float) -> None:
    if name == "kill web replica":
        topo.kill_replica(0)
        time.sleep(3)  # the orchestrator's restart delay
        topo.restore_replica(0)
    elif name == "kill worker":
        topo.kill_worker(0)
        time.sleep(3)
        topo.restore_worker(0)
    elif name == "restart postgresql":
        assert topo.pg is not None
        if topo.pg.external_url:
            return
        topo.pg.restart()
    elif name == "stop redis":
        topo.stop_redis()
        time.sleep(redis_down)
        topo.restore_redis()


def _run_faults(topo: Topology, plan: list[tuple[str, float]], started: float, redis_down: float,
                faults: list[Fault], say: Any) -> None:
    for name, at in plan:
        time.sleep(max(0.0, started + at - time.monotonic()))
        fault = Fault(name, round(time.monotonic() - started, 2))
        say(f"fault: {name} at {fault.at:.1f} s")
        _inject(topo, name, redis_down)
        fault.until = round(time.monotonic() - started, 2)
        faults.append(fault)


def _drive(topo: Topology, token: str, args: argparse.Namespace, say: Any) -> tuple[Ledger, list[Fault], list[Any],
                                                                                     float]:
    ledger = Ledger()
    faults: list[Fault] = []
    probes: list[tuple[float, bool, str]] = []
    duration = args.minutes * 60
    if args.faults:
        duration = max(duration, 0.55 * duration + args.redis_down_s + 15)
    started = time.monotonic()
    until = started + duration
    threads = [threading.Thread(target=Agent(topo.url, token, i, ledger, started).run, args=(until,), daemon=True)
               for i in range(args.agents)]
    threads.append(threading.Thread(target=probe, args=(topo.url, token, until, started, probes), daemon=True))
    if args.faults:
        plan = _schedule(duration, args.redis_down_s)
        threads.append(threading.Thread(target=_run_faults, args=(topo, plan, started, args.redis_down_s, faults, say),
                                        daemon=True))
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        time.sleep(5)
        if topo.revive_workers():
            say("restarted a worker that had exited")
        elapsed = time.monotonic() - started
        if elapsed < duration + 5:
            say(f"{elapsed:5.0f} s: {len(ledger.calls)} calls, {ledger.acknowledged()} acknowledged writes")
    return ledger, faults, probes, time.monotonic() - started


def _commits(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return int(row[0]) if row else 0


def _job_rate(url: str, sessions: set[str]) -> float:
    """Jobs finished per second while they were running (a lower bound of what the workers sustain)."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*), extract(epoch FROM max(finished_at) - min(finished_at)) "
                           "FROM agent_sessions_sessionjob WHERE status = 'done' AND session_id::text = ANY(%s)",
                           [list(sessions)]).fetchone()
    return round(float(row[0]) / float(row[1]), 1) if row and row[1] else 0.0


def _wait_jobs(topo: Topology, sessions: set[str], wait_s: float, say: Any) -> dict[str, int]:
    """Waits until every job of every acknowledged close is done (or failed); returns counts by status."""
    assert topo.pg is not None
    url = topo.pg.url
    deadline = time.monotonic() + wait_s
    counts: dict[str, int] = {}
    while True:
        if topo.revive_workers():
            say("restarted a worker that had exited")
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT status, count(*) FROM agent_sessions_sessionjob "
                                "WHERE session_id::text = ANY(%s) GROUP BY status", [list(sessions)]).fetchall()
        counts = {str(status): int(n) for status, n in rows}
        open_jobs = sum(n for status, n in counts.items() if status not in ("done", "failed"))
        if open_jobs == 0 or time.monotonic() > deadline:
            return counts
        say(f"waiting for {open_jobs} queued jobs ...")
        time.sleep(5)


def check_ledger(url: str, ledger: Ledger) -> dict[str, Any]:
    """Lost: acknowledged but absent (or a close not recorded). Duplicated: one marker stored more than once."""
    with psycopg.connect(url) as conn:
        def present(sql: str, keys: list[str]) -> set[str]:
            return {str(r[0]) for r in conn.execute(sql, [keys]).fetchall()}

        sessions = present("SELECT id FROM agent_sessions_session WHERE id::text = ANY(%s)", list(ledger.sessions))
        closed = present("SELECT id FROM agent_sessions_session WHERE ended_at IS NOT NULL AND id::text = ANY(%s)",
                         list(ledger.closes))
        events = present("SELECT id FROM agent_sessions_sessionevent WHERE id::text = ANY(%s)", list(ledger.events))
        teaches = present("SELECT id FROM knowledge_knowledgeitem WHERE deleted_at IS NULL AND id::text = ANY(%s)",
                          list(ledger.teaches))
        event_dupes = conn.execute(
            "SELECT count(*) - count(DISTINCT payload->>'marker') FROM agent_sessions_sessionevent "
            "WHERE payload->>'marker' = ANY(%s)", [list(ledger.events.values())]).fetchone()
        teach_dupes = conn.execute(
            "SELECT count(*) FROM unnest(%s::text[]) AS m WHERE (SELECT count(*) FROM knowledge_knowledgeitem k "
            "WHERE k.content LIKE '%%(' || m || ')%%') > 1", [list(ledger.teaches.values())]).fetchone()
        other = conn.execute("SELECT count(*) FROM agent_sessions_session s JOIN projects_user u "
                             "ON u.id = s.user_id WHERE u.email = 'other-tenant@bench.invalid'").fetchone()
    lost = {"sessions": len(ledger.sessions - sessions), "closes": len(ledger.closes - closed),
            "events": len(set(ledger.events) - events), "teaches": len(set(ledger.teaches) - teaches)}
    duplicated = {"events": int(event_dupes[0] if event_dupes else 0),
                  "teaches": int(teach_dupes[0] if teach_dupes else 0)}
    return {"lost": lost, "duplicated": duplicated, "other_tenant_sessions": int(other[0] if other else 0)}


def run(args: argparse.Namespace) -> int:
    if min(args.web, args.workers, args.agents) < 1 or args.minutes <= 0:
        print("brain bench cluster: --web, --workers and --agents must be >= 1, --minutes > 0", file=sys.stderr)
        return 2
    if not shutil.which("haproxy") and not Path("/usr/sbin/haproxy").exists():
        print("brain bench cluster: needs HAProxy (apt-get install haproxy, or `make haproxy`)", file=sys.stderr)
        return 2
    import os

    def say(message: str) -> None:
        print(f"brain bench cluster: [{time.monotonic() - begun:6.1f} s] {message}", file=sys.stderr, flush=True)

    begun = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="brain-cluster-"))
    topo = Topology(root, args.web, args.workers, args.web_threads, os.environ.get("DATABASE_URL") or None)
    try:
        say(f"starting the topology in {root} ...")
        topo.start()
        say("topology ready; creating the bench user and token")
        token = _setup_token(topo.env)
        say(f"serving at {topo.url}; {args.agents} agents for {args.minutes} min")
        assert topo.pg is not None
        commits = _commits(topo.pg.url)
        ledger, faults, probes, wall = _drive(topo, token, args, say)
        db_commits_per_s = round((_commits(topo.pg.url) - commits) / wall, 1)
        jobs = _wait_jobs(topo, ledger.closes, args.jobs_wait_s, say)
        report = summarise(ledger, faults, probes, wall, check_ledger(topo.pg.url, ledger), jobs, args)
        report["db_commits_per_s"] = db_commits_per_s
        report["worker_restarts"] = topo.worker_restarts
        report["jobs_per_s"] = _job_rate(topo.pg.url, ledger.closes)
    finally:
        topo.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2) if args.json else render(report))
    failed = report["lost"] or report["duplicated"] or report["jobs_not_run"] or report["other_tenant_sessions"]
    return 1 if failed else 0
