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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from brain.bench.cluster_agents import Agent, Ledger, probe
from brain.bench.cluster_procs import Topology, _brain_exe
from brain.bench.lme import percentile

HELP = "run web replicas behind HAProxy, workers, beat, PostgreSQL and Redis; agents over MCP; faults; check writes"
SETTLE_S = 10.0  # errors this long after a fault ends still belong to it (requests in flight, health checks)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--web", type=int, default=2, help="gunicorn web replicas behind the balancer")
    parser.add_argument("--workers", type=int, default=1, help="Celery workers (plus exactly one beat)")
    parser.add_argument("--agents", type=int, default=8, help="simulated agents (even: handshake era, odd: stateless)")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long the agents work")
    parser.add_argument("--faults", action="store_true", help="kill a replica, kill a worker, restart PostgreSQL, "
                        "stop Redis, during the run")
    parser.add_argument("--redis-down-s", type=float, default=30.0, help="how long Redis stays stopped")
    parser.add_argument("--web-threads", type=int, default=4, help="threads per gunicorn worker (2 workers each)")
    parser.add_argument("--jobs-wait-s", type=float, default=180.0, help="how long to wait for queued jobs at the end")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs) afterwards")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


@dataclass
class Fault:
    name: str
    at: float  # seconds since the run started
    until: float = 0.0  # when the component was back (restarted, or Redis running again)


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


def _wait_jobs(url: str, sessions: set[str], wait_s: float, say: Any) -> dict[str, int]:
    """Waits until every job of every acknowledged close is done (or failed); returns counts by status."""
    deadline = time.monotonic() + wait_s
    counts: dict[str, int] = {}
    while True:
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


def _fault_of(at: float, faults: list[Fault]) -> str:
    for fault in reversed(faults):
        if fault.at - 0.5 <= at <= fault.until + SETTLE_S:
            return fault.name
    return "no fault"


def _recovery(faults: list[Fault], probes: list[tuple[float, bool, str]]) -> dict[str, float]:
    """Per fault: seconds from its start to the first good probe after the last failed one (0 if none failed)."""
    out: dict[str, float] = {}
    for n, fault in enumerate(faults):
        end = min(fault.until + SETTLE_S, faults[n + 1].at if n + 1 < len(faults) else fault.until + SETTLE_S)
        window = [(at, ok) for at, ok, _ in probes if fault.at <= at < end]
        failed = [at for at, ok in window if not ok]
        if not failed:
            out[fault.name] = 0.0
            continue
        back = next((at for at, ok, _ in probes if ok and at > failed[-1]), failed[-1])
        out[fault.name] = round(back - fault.at, 2)
    return out


def summarise(ledger: Ledger, faults: list[Fault], probes: list[tuple[float, bool, str]], wall: float,
              checked: dict[str, Any], jobs: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    tools: dict[str, list[float]] = {}
    replicas: dict[str, int] = {}
    errors: dict[str, int] = {}
    samples: dict[str, str] = {}
    for call in ledger.calls:
        if call.ok:
            tools.setdefault(call.tool, []).append(call.ms)
            replicas[call.replica or "?"] = replicas.get(call.replica or "?", 0) + 1
        else:
            where = _fault_of(call.at + call.ms / 1000, faults)  # when it failed, not when it was sent
            errors[where] = errors.get(where, 0) + 1
            samples.setdefault(where, f"{call.tool} at {call.at} s: {call.error}")
    redis = next((f for f in faults if f.name == "stop redis"), None)
    closes = [c for c in ledger.calls if c.tool == "brain_report_session_outcome" and redis
              and redis.at <= c.at <= redis.until]
    recovery = _recovery(faults, probes)
    probe_failures = [{"at_s": at, "why": why, "fault": _fault_of(at, faults)} for at, ok, why in probes if not ok]
    lost = sum(checked["lost"].values())
    duplicated = sum(checked["duplicated"].values())
    return {
        "topology": {"web": args.web, "workers": args.workers, "beat": 1, "agents": args.agents,
                     "minutes": round(wall / 60, 2), "faults": args.faults, "redis_down_s": args.redis_down_s},
        "acknowledged": ledger.acknowledged(), "lost": lost, "duplicated": duplicated,
        "errors": sum(errors.values()), "recovery_s": max(recovery.values(), default=0.0),
        "acknowledged_by_kind": {"sessions": len(ledger.sessions), "closes": len(ledger.closes),
                                 "events": len(ledger.events), "teaches": len(ledger.teaches)},
        "lost_by_kind": checked["lost"], "duplicated_by_kind": checked["duplicated"],
        "other_tenant_sessions": checked["other_tenant_sessions"],
        "errors_by_fault": errors, "error_samples": samples, "recovery_by_fault_s": recovery,
        "faults": [{"name": f.name, "at_s": f.at, "back_s": f.until} for f in faults],
        "probe_failures": probe_failures[:50],
        "closes_while_redis_down": {"calls": len(closes), "failed": sum(1 for c in closes if not c.ok)},
        "jobs": jobs, "jobs_not_run": sum(n for s, n in jobs.items() if s not in ("done", "failed")),
        "calls": len(ledger.calls), "calls_per_s": round(sum(1 for c in ledger.calls if c.ok) / wall, 1),
        "per_replica_calls_per_s": {name: round(n / wall, 1) for name, n in sorted(replicas.items())},
        "tools": {name: {"n": len(ms), "p50_ms": percentile(sorted(ms), 50), "p95_ms": percentile(sorted(ms), 95)}
                  for name, ms in sorted(tools.items())},
    }


def render(report: dict[str, Any]) -> str:
    t = report["topology"]
    lines = [f"cluster: {t['web']} web replicas (HAProxy round robin), {t['workers']} worker(s), 1 beat, "
             f"{t['agents']} agents, {t['minutes']} min, faults={'on' if t['faults'] else 'off'}", "",
             f"acknowledged writes: {report['acknowledged']} {report['acknowledged_by_kind']}",
             f"lost: {report['lost']} {report['lost_by_kind']}   duplicated: {report['duplicated']} "
             f"{report['duplicated_by_kind']}   other tenant's sessions: {report['other_tenant_sessions']}",
             f"jobs of acknowledged closes: {report['jobs']} (not run: {report['jobs_not_run']})", "",
             f"throughput: {report['calls_per_s']} calls/s; per replica: {report['per_replica_calls_per_s']}", "",
             f"{'tool':<32} {'n':>6} {'p50 ms':>9} {'p95 ms':>9}"]
    for name, row in report["tools"].items():
        lines.append(f"{name:<32} {row['n']:>6} {row['p50_ms']:>9} {row['p95_ms']:>9}")
    lines += ["", f"errors: {report['errors']} by fault {report['errors_by_fault']}"]
    lines += [f"  {where}: {sample}" for where, sample in report["error_samples"].items()]
    for fault in report["faults"]:
        lines.append(f"fault {fault['name']:<20} at {fault['at_s']:>6.1f} s, back at {fault['back_s']:>6.1f} s, "
                     f"service recovered in {report['recovery_by_fault_s'][fault['name']]:.2f} s")
    if report["faults"]:
        c = report["closes_while_redis_down"]
        lines.append(f"session closes while Redis was down: {c['calls']} calls, {c['failed']} failed")
    lines.append(f"longest recovery: {report['recovery_s']:.2f} s")
    lines.append(f"database: {report['db_commits_per_s']} commits/s during the run; workers finished "
                 f"{report['jobs_per_s']} jobs/s")
    return "\n".join(lines)


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
        jobs = _wait_jobs(topo.pg.url, ledger.closes, args.jobs_wait_s, say)
        report = summarise(ledger, faults, probes, wall, check_ledger(topo.pg.url, ledger), jobs, args)
        report["db_commits_per_s"] = db_commits_per_s
        report["jobs_per_s"] = _job_rate(topo.pg.url, ledger.closes)
    finally:
        topo.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(report, indent=2) if args.json else render(report))
    failed = report["lost"] or report["duplicated"] or report["jobs_not_run"] or report["other_tenant_sessions"]
    return 1 if failed else 0
