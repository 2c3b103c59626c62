"""The dream cycle: the existing evolution and decay jobs for one scope, and the cross-session extract of its
owner, queued at session end when due.

Due when DREAM_WRITES knowledge writes happened in the scope since the last cycle, or DREAM_EVERY passed
(a scope that never dreamt is due once it has any write), and never twice within DREAM_MIN_GAP. What the
jobs propose (consolidations, fades) waits in the review queue like any nightly proposal.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from brain.logs import log_op
from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem
from knowledge.nightly import NightlyScope
from projects.models import User

logger = logging.getLogger(__name__)
DREAM_WRITES = 20
DREAM_EVERY = timedelta(hours=24)
DREAM_MIN_GAP = timedelta(hours=1)


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
    """Records the run and sends the scope's evolution and decay tasks after commit, when due."""
    from knowledge.tasks import decay_scope, evolve_scope  # the Celery app loads late in the CLI
    from sessions.tasks import cross_session_user

    instant = now or timezone.now()
    with transaction.atomic():
        with connection.cursor() as cur:  # once per scope per hour, even when two sessions end together
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ["dream:" + scope.key])
        decision = dream_due(scope=scope, now=instant)
        if decision.due:
            run = DreamRun.objects.create(owner=owner, scope=scope.key, reason=decision.reason)
            DreamRun.objects.filter(pk=run.pk).update(created_at=instant)  # the decision's instant, not the clock's
            as_of = instant.isoformat()
            transaction.on_commit(lambda: (evolve_scope.delay(scope.key, as_of), decay_scope.delay(scope.key, as_of),
                                           cross_session_user.delay(str(owner.id), as_of)))
    log_op(logger, "dream.decision", scope=scope.key[:16], due=decision.due, reason=decision.reason,
           writes=decision.writes)
    return decision
