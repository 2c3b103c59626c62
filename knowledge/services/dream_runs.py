"""Running one job (evolution, decay or the cross-session extract) of one recorded dream run exactly once,
however often it is sent.

The run row is locked for the job's transaction and the job stamps its `*_at` field in that same
transaction: a second message for the same job waits on the lock, then finds the stamp and does nothing;
a run that failed rolled back both its writes and its stamp, so the next message does the work.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from brain.errors import ValidationFailed
from brain.logs import log_op
from knowledge.guard_models import DreamRun
from knowledge.nightly import NightlyScope

logger = logging.getLogger(__name__)
DREAM_JOBS = {"evolve": "evolved_at", "decay": "decayed_at", "cross_session": "crossed_at"}


def dream_job_run(*, run_id: str, job: str, work: Callable[[DreamRun, NightlyScope, datetime], int]) -> str:
    """Runs `work` for the run's scope as of the run's instant unless this job of the run already finished."""
    stamp = DREAM_JOBS.get(job)
    if stamp is None:
        raise ValidationFailed(f"dream job must be one of {sorted(DREAM_JOBS)}; got {job!r}")
    try:
        uuid.UUID(str(run_id))
    except ValueError:
        raise ValidationFailed(f"dream run id must be a UUID; got {run_id!r}") from None
    with transaction.atomic():
        run = DreamRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or getattr(run, stamp) is not None:
            outcome = "skipped_run_gone" if run is None else "skipped_already_done"
            log_op(logger, "dream.job", run=str(run_id)[:8], job=job, outcome=outcome, items=0)
            return outcome
        items = work(run, NightlyScope.parse(run.scope), run.created_at)
        DreamRun.objects.filter(pk=run.pk).update(**{stamp: timezone.now()})
    log_op(logger, "dream.job", run=str(run_id)[:8], job=job, outcome="ok", items=items)
    return "ok"
