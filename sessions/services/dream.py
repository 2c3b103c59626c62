"""The dream cycle: the existing evolution, decay and cross-session jobs for one scope, queued at session end
when due.

Due when DREAM_WRITES knowledge writes happened in the scope since the last cycle, or DREAM_EVERY passed
(a scope that never dreamt is due once it has any write), and never twice within DREAM_MIN_GAP. What the
jobs propose (consolidations, fades) waits in the review queue like any nightly proposal.

The `DreamRun` row is the outbox: it commits with the decision, the three messages go out after commit (from the
process's sender thread, `brain.broker.send_soon`), a broker outage leaves the row unsent for the beat sweep
(`dream_runs_requeue`), and each job stamps the row when done so a message sent twice runs its job once
(knowledge/services/dream_runs.py).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from brain.broker import Message, no_mark, send_quick, send_soon
from brain.logs import log_op
from brain.sql_rows import xact_lock
from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem
from knowledge.nightly import NightlyScope
from projects.models import User
from sessions.services.jobs import job_settings

logger = logging.getLogger(__name__)
DREAM_WRITES = 20
DREAM_EVERY = timedelta(hours=24)
DREAM_MIN_GAP = timedelta(hours=1)
# (task, the run's field its job stamps when done); the tasks take (scope, as_of, run id).
DREAM_TASKS = (("knowledge.tasks.evolve_scope", "evolved_at"), ("knowledge.tasks.decay_scope", "decayed_at"),
               ("sessions.tasks.cross_session_dream", "crossed_at"))


@dataclass(frozen=True)
class DreamDue:
    due: bool
    reason: str
    writes: int


def dream_due(*, scope: NightlyScope, now: datetime) -> DreamDue:
    last = DreamRun.objects.filter(scope=scope.key).order_by("-created_at").first()
    since = last.created_at if last else None
    writes_q = KnowledgeItem.objects.filter(scope.filter())
    writes = (writes_q.filter(updated_at__gt=since) if since else writes_q).count()
    if since is not None and now - since < DREAM_MIN_GAP:
        return DreamDue(False, "ran_within_the_hour", writes)
    if writes >= DREAM_WRITES:
        return DreamDue(True, "writes", writes)
    if since is None:
        return DreamDue(writes > 0, "first_cycle" if writes else "nothing_to_do", writes)
    if now - since >= DREAM_EVERY:
        return DreamDue(True, "daily", writes)
    return DreamDue(False, "not_due", writes)


def dream_queue_if_due(*, owner: User, scope: NightlyScope, now: datetime | None = None) -> DreamDue:
    """Records the run and sends the scope's evolution, decay and cross-session tasks after commit, when due.
    The run row is the outbox: an unreachable broker leaves it unsent for `dream_runs_requeue`, never fails
    the caller."""
    instant = now or timezone.now()
    with transaction.atomic():
        xact_lock("dream:" + scope.key)  # once per scope per hour, even when two sessions end together
        decision = dream_due(scope=scope, now=instant)
        if decision.due:
            run = DreamRun.objects.create(owner=owner, scope=scope.key, reason=decision.reason)
            DreamRun.objects.filter(pk=run.pk).update(created_at=instant)  # the decision's instant, not the clock's
            run.created_at = instant
            # Sent from the sender thread once the run is committed, as a session close's jobs are.
            transaction.on_commit(lambda: send_soon(_messages([run]), op="dream.enqueue_failed"))
    log_op(logger, "dream.decision", scope=scope.key[:16], due=decision.due, reason=decision.reason,
           writes=decision.writes)
    return decision


def _mark_sent(run_id: uuid.UUID) -> None:
    DreamRun.objects.filter(pk=run_id).update(enqueued_at=timezone.now())


def _messages(runs: list[DreamRun]) -> list[Message]:
    """One message per unfinished job of each run; a run counts as sent once all of its messages went out."""
    messages: list[Message] = []
    for run in runs:
        todo = [(task, done) for task, done in DREAM_TASKS if getattr(run, done) is None]
        for n, (task, _) in enumerate(todo):
            mark = partial(_mark_sent, run.pk) if n == len(todo) - 1 else no_mark
            messages.append(Message(task, (run.scope, run.created_at.isoformat(), str(run.pk)), mark))
    return messages


def _send(run_ids: list[uuid.UUID]) -> int:
    runs = list(DreamRun.objects.filter(pk__in=run_ids).order_by("created_at"))
    return send_quick(_messages(runs), op="dream.enqueue_failed")


def _unfinished() -> Q:
    unfinished = Q()
    for _, done in DREAM_TASKS:
        unfinished |= Q(**{f"{done}__isnull": True})
    return unfinished


def _abandon_aged(now: datetime) -> None:
    """Stamps the runs that just aged out of the re-send window with a job unfinished (those of the last day:
    older ones predate the stamp) and logs them: their work falls to the scope's next cycle."""
    aged = DreamRun.objects.filter(created_at__lt=now - DREAM_MIN_GAP, created_at__gte=now - DREAM_EVERY,
                                   abandoned_at__isnull=True).filter(_unfinished())
    scopes = list(aged.values_list("scope", flat=True)[:20])
    if scopes and (count := aged.update(abandoned_at=now)):
        log_op(logger, "dream.runs_abandoned", level=logging.WARNING, count=count, scopes=",".join(scopes))


def dream_runs_requeue(*, now: datetime | None = None) -> int:
    """Sends again the recent runs the broker never got, or whose jobs have not finished long after sending
    (a message lost with the broker). Older runs are left to the next cycle, with a log line. Returns messages
    sent."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=job_settings().requeue_after_s)
    due = DreamRun.objects.filter(created_at__gte=now - DREAM_MIN_GAP).filter(
        Q(enqueued_at__isnull=True) | (Q(enqueued_at__lt=stale) & _unfinished()))
    ids = list(due.values_list("pk", flat=True)[:100])
    sent = _send(ids) if ids else 0
    if ids:
        log_op(logger, "dream.requeue", due=len(ids), sent=sent)
    _abandon_aged(now)
    return sent
