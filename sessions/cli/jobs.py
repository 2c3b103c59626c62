"""`brain jobs run <job>`: run one background job in this process, now (no broker, no worker needed).

    brain jobs run decay --as-of 2026-06-01          every scope, one fixed instant
    brain jobs run evolution --scope project:<uuid>  one scope
    brain jobs run cross-session
    brain jobs run requeue                           send pending session jobs to the broker
    brain jobs run extract --session <uuid>          (also: autoskill)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

HELP = "run one background job now, in this process (decay, evolution, cross-session, requeue, extract, autoskill)"
JOBS = ("decay", "evolution", "cross-session", "requeue", "extract", "autoskill")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", choices=JOBS)
    parser.add_argument("--as-of", default=None, help="ISO date/time of a nightly run (default: today 00:00 UTC)")
    parser.add_argument("--scope", default=None, help="project:<uuid> or owner:<uuid> (default: every scope)")
    parser.add_argument("--session", default=None, help="session id, for extract and autoskill")


def _nightly(job: str, as_of: str | None, scope: str | None) -> dict[str, Any]:
    from knowledge.nightly import NightlyScope, nightly_scopes, parse_as_of
    from knowledge.services.decay import decay_scope_run
    from knowledge.services.evolution import evolution_scope_run

    instant = parse_as_of(as_of)
    runner = decay_scope_run if job == "decay" else evolution_scope_run
    reports = {key: runner(scope=NightlyScope.parse(key), as_of=instant).__dict__
               for key in ([scope] if scope else nightly_scopes())}
    return {"asOf": instant.isoformat(), "scopes": reports}


def _session_job(job: str, session_id: str | None) -> dict[str, Any]:
    from brain.errors import ValidationFailed
    from sessions.services.autoskill import autoskill_work
    from sessions.services.extraction import extract_work
    from sessions.services.jobs import session_job_run

    if not session_id:
        raise ValidationFailed(f"`brain jobs run {job}` needs --session <uuid>")
    work = extract_work if job == "extract" else autoskill_work
    return {"outcome": session_job_run(session_id=session_id, name=job, work=work, final=True)}


def run(args: argparse.Namespace) -> int:
    if args.job in ("decay", "evolution"):
        result = _nightly(args.job, args.as_of, args.scope)
    elif args.job == "cross-session":
        from sessions.services.cross_session import cross_session_run_all

        result = {"created": cross_session_run_all(as_of=args.as_of)}
    elif args.job == "requeue":
        from sessions.services.jobs import session_jobs_requeue

        result = {"sent": session_jobs_requeue()}
    else:
        result = _session_job(args.job, args.session)
    print(json.dumps(result, indent=2, default=str))
    return 0
