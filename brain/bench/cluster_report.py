"""The figures of `brain bench cluster`: errors by cause and by when they happened relative to the faults,
recovery per fault, throughput, latency per tool; and the text rendering.

An error's timing is judged by the call's own span [sent, failed]:
- in flight at a fault: the call was under way at the instant the fault struck (the only errors the
  targets allow);
- during an outage: sent after the fault struck, before the component was back (the fault's window);
- recovering: failed within SETTLE_S after the component was back;
- outside faults: anything else (overload, a bug).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from brain.bench.cluster_agents import Call, Ledger
from brain.bench.lme import percentile

SETTLE_S = 10.0  # errors this long after a fault ends still belong to it (requests in flight, health checks)
TIMINGS = ("in flight at fault", "during outage", "recovering", "outside faults")


@dataclass
class Fault:
    name: str
    at: float  # seconds since the run started
    until: float = 0.0  # when the component was back (restarted, or Redis running again)


def cause_of(error: str) -> str:
    """A short cause for an error string recorded by the agents."""
    if error.startswith("HTTP "):
        return error  # the agent already names the status and who answered (the app or the balancer)
    if "Timeout" in error:
        return "client timeout"
    if any(kind in error for kind in ("RemoteProtocolError", "ReadError", "WriteError", "ConnectError")):
        return "connection dropped"
    if error.startswith("rpc "):
        return error.split(":")[0]
    if error.startswith("tool error"):
        return "tool error"
    return error.split(":")[0][:40]


def timing_of(call: Call, faults: list[Fault]) -> tuple[str, str]:
    """(timing, fault name) of a failed call; see the module docstring."""
    start, end = call.at, call.at + call.ms / 1000
    for fault in faults:
        if start <= fault.at <= end:
            return "in flight at fault", fault.name
    for fault in faults:
        if start <= fault.until and end >= fault.at:
            return "during outage", fault.name
    for fault in faults:
        if fault.until < end <= fault.until + SETTLE_S:
            return "recovering", fault.name
    return "outside faults", "no fault"


def errors_report(calls: list[Call], faults: list[Fault]) -> dict[str, Any]:
    by_fault: dict[str, int] = {}
    by_cause: dict[str, int] = {}
    by_timing = dict.fromkeys(TIMINGS, 0)
    by_fault_cause: dict[str, dict[str, int]] = {}
    detail: list[dict[str, Any]] = []
    samples: dict[str, str] = {}
    for call in calls:
        if call.ok:
            continue
        timing, fault = timing_of(call, faults)
        cause = cause_of(call.error)
        by_fault[fault] = by_fault.get(fault, 0) + 1
        by_cause[cause] = by_cause.get(cause, 0) + 1
        by_timing[timing] += 1
        cell = by_fault_cause.setdefault(fault, {})
        cell[cause] = cell.get(cause, 0) + 1
        samples.setdefault(fault, f"{call.tool} at {call.at} s: {call.error}")
        if timing != "in flight at fault" and len(detail) < 60:
            detail.append({"sent_s": call.at, "failed_s": round(call.at + call.ms / 1000, 2), "tool": call.tool,
                           "replica": call.replica, "error": call.error, "timing": timing, "fault": fault})
    return {"errors": sum(by_fault.values()), "errors_by_fault": by_fault, "errors_by_cause": by_cause,
            "errors_by_timing": by_timing, "errors_by_fault_and_cause": by_fault_cause,
            "errors_not_in_flight": detail, "error_samples": samples}


def recovery(faults: list[Fault], probes: list[tuple[float, bool, str]]) -> dict[str, float]:
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


def _probe_fault(at: float, faults: list[Fault]) -> str:
    for fault in reversed(faults):
        if fault.at - 0.5 <= at <= fault.until + SETTLE_S:
            return fault.name
    return "no fault"


def summarise(ledger: Ledger, faults: list[Fault], probes: list[tuple[float, bool, str]], wall: float,
              checked: dict[str, Any], jobs: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    tools: dict[str, list[float]] = {}
    replicas: dict[str, int] = {}
    for call in ledger.calls:
        if call.ok:
            tools.setdefault(call.tool, []).append(call.ms)
            replicas[call.replica or "?"] = replicas.get(call.replica or "?", 0) + 1
    errors = errors_report(ledger.calls, faults)
    redis = next((f for f in faults if f.name == "stop redis"), None)
    closes = [c for c in ledger.calls if c.tool == "brain_report_session_outcome" and redis
              and redis.at <= c.at <= redis.until]
    recovered = recovery(faults, probes)
    probe_failures = [{"at_s": at, "why": why, "fault": _probe_fault(at, faults)} for at, ok, why in probes if not ok]
    lost = sum(checked["lost"].values())
    duplicated = sum(checked["duplicated"].values())
    return {
        "topology": {"web": args.web, "workers": args.workers, "beat": 1, "agents": args.agents,
                     "minutes": round(wall / 60, 2), "faults": args.faults, "redis_down_s": args.redis_down_s},
        "acknowledged": ledger.acknowledged(), "lost": lost, "duplicated": duplicated,
        "errors": errors.pop("errors"), "recovery_s": max(recovered.values(), default=0.0),
        "acknowledged_by_kind": {"sessions": len(ledger.sessions), "closes": len(ledger.closes),
                                 "events": len(ledger.events), "teaches": len(ledger.teaches)},
        "lost_by_kind": checked["lost"], "duplicated_by_kind": checked["duplicated"],
        "other_tenant_sessions": checked["other_tenant_sessions"],
        **errors, "recovery_by_fault_s": recovered,
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
    lines += ["", f"errors: {report['errors']} by timing {report['errors_by_timing']}",
              f"  by fault and cause: {report['errors_by_fault_and_cause']}"]
    lines += [f"  {where}: {sample}" for where, sample in report["error_samples"].items()]
    lines += [f"  not in flight: {e['tool']} sent {e['sent_s']} s, failed {e['failed_s']} s ({e['timing']}, "
              f"{e['fault']}): {e['error']}" for e in report["errors_not_in_flight"][:10]]
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
