"""Knowledge tasks: the nightly fan-outs (one task per scope with one fixed `as_of`) and the vector catch-up."""

from __future__ import annotations

import logging

from celery import shared_task

from brain.logs import log_op
from knowledge.nightly import NightlyScope, nightly_scopes, parse_as_of
from knowledge.services.decay import decay_scope_run
from knowledge.services.dream_runs import dream_job_run
from knowledge.services.evolution import evolution_scope_run

logger = logging.getLogger(__name__)

_SCOPE_TASK = {"acks_late": True, "reject_on_worker_lost": True, "autoretry_for": (Exception,),
               "max_retries": 3, "retry_backoff": 30, "retry_backoff_max": 600, "retry_jitter": True}


@shared_task(name="knowledge.tasks.decay_scope", **_SCOPE_TASK)
def decay_scope(scope: str, as_of: str, run_id: str | None = None) -> int | str:
    """Decay of one project (or one owner's personal rows) as of a fixed instant; rerunning changes nothing.
    With `run_id` (a dream run) it runs once per run however often the message arrives."""
    if run_id:
        return dream_job_run(run_id=run_id, job="decay",
                             work=lambda run, s, at: decay_scope_run(scope=s, as_of=at, propose_to=run.id).changed)
    return decay_scope_run(scope=NightlyScope.parse(scope), as_of=parse_as_of(as_of)).changed


@shared_task(name="knowledge.tasks.evolve_scope", **_SCOPE_TASK)
def evolve_scope(scope: str, as_of: str, run_id: str | None = None) -> int | str:
    """Evolution of one scope as of a fixed instant; with `run_id`, once per dream run."""
    if run_id:
        return dream_job_run(run_id=run_id, job="evolve",
                             work=lambda run, s, at: evolution_scope_run(scope=s, as_of=at, propose_to=run.id).merged)
    return evolution_scope_run(scope=NightlyScope.parse(scope), as_of=parse_as_of(as_of)).merged


def _fan_out(name: str, task: object, as_of: str | None) -> int:
    instant = parse_as_of(as_of).isoformat()
    scopes = nightly_scopes()
    for scope in scopes:
        task.delay(scope, instant)  # type: ignore[attr-defined]
    log_op(logger, "jobs.fan_out", job=name, scopes=len(scopes), asOf=instant)
    return len(scopes)


@shared_task(name="knowledge.tasks.nightly_decay")
def nightly_decay(as_of: str | None = None) -> int:
    """Beat, nightly: one decay task per scope."""
    return _fan_out("decay", decay_scope, as_of)


@shared_task(name="knowledge.tasks.nightly_evolution")
def nightly_evolution(as_of: str | None = None) -> int:
    """Beat, nightly: one evolution task per scope."""
    return _fan_out("evolution", evolve_scope, as_of)


@shared_task(name="knowledge.tasks.scope_rows_recount", autoretry_for=(Exception,), max_retries=3, retry_backoff=60)
def scope_rows_recount() -> int:
    """Beat, nightly: every scope's kept row count checked against its rows (`knowledge.services.scope_rows`)."""
    from knowledge.services.scope_rows import scope_rows_recount as recount

    return recount()


@shared_task(name="knowledge.tasks.embed_pending_knowledge", acks_late=True)
def embed_pending_knowledge() -> int:
    """Beat, every minute: vectors for knowledge rows whose in-process batcher never ran (crash, full queue)."""
    from knowledge.services.knowledge_vectors import knowledge_vectors_backfill

    return knowledge_vectors_backfill()
