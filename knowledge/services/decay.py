"""Nightly decay: how alive a row is, from the time since it was last used and how well it works.

    decay = max(exp(-days_since_last_use / half_life), 0.05)

half_life is 90 days; 45 for rows with at least 5 outcomes and an effectiveness under 0.3 (they fade
fast and are flagged `low_effectiveness`), 180 for rows with at least 5 outcomes and 0.7 or more.
Rows at or under the decay floor (DECAY_FLOOR, 0.3) leave retrieval (knowledge/selectors/search.py) and are
counted as retired. Decisions and pinned rows never decay."""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.db.models import F, Func, Value

from brain.logs import log_op
from knowledge.models import KnowledgeItem, KnowledgeType
from knowledge.nightly import NightlyScope
from knowledge.selectors.search import decay_floor
from knowledge.services.dream_proposals import RETIRE, propose_fade

logger = logging.getLogger(__name__)

HALF_LIFE_DAYS = 90.0
FAST_HALF_LIFE_DAYS = 45.0
SLOW_HALF_LIFE_DAYS = 180.0
MIN_OUTCOMES = 5
LOW_EFFECTIVENESS = 0.3
HIGH_EFFECTIVENESS = 0.7
FLOOR = 0.05
LOW_EFFECTIVENESS_TAG = "low_effectiveness"


@dataclass(frozen=True)
class DecayReport:
    rows: int
    changed: int
    retired: int
    flagged: int


def effectiveness(item: KnowledgeItem) -> float | None:
    """Success share of reported outcomes; None below 5 outcomes (too few to judge)."""
    outcomes = item.success_count + item.failure_count
    return item.success_count / outcomes if outcomes >= MIN_OUTCOMES else None


def half_life_days(item: KnowledgeItem) -> float:
    rate = effectiveness(item)
    if rate is None:
        return HALF_LIFE_DAYS
    if rate < LOW_EFFECTIVENESS:
        return FAST_HALF_LIFE_DAYS
    return SLOW_HALF_LIFE_DAYS if rate >= HIGH_EFFECTIVENESS else HALF_LIFE_DAYS


def decay_score(item: KnowledgeItem, as_of: datetime) -> float:
    last = item.last_used_at or item.created_at
    days = max((as_of - last).total_seconds() / 86400, 0.0)
    return round(max(math.exp(-days / half_life_days(item)), FLOOR), 6)


def _flagged(item: KnowledgeItem) -> bool:
    rate = effectiveness(item)
    return rate is not None and rate < LOW_EFFECTIVENESS


def _propose_retirement(run_id: uuid.UUID, item: KnowledgeItem, score: float) -> float:
    """The dream cycle asks before a row leaves retrieval: the fade is proposed, the score stays."""
    propose_fade(run_id, item, RETIRE, f"Unused since {(item.last_used_at or item.created_at):%Y-%m-%d}: its decay "
                 f"would fall to {score:.2f}, under the floor, and it would leave retrieval.", decay=score)
    return item.decay_score


@dataclass
class DecayPlan:
    """What a run computed from the rows as it read them: new scores, and rows to flag or unflag."""

    rows: list[KnowledgeItem]
    scores: dict[uuid.UUID, float] = field(default_factory=dict)
    flag: list[uuid.UUID] = field(default_factory=list)
    unflag: list[uuid.UUID] = field(default_factory=list)


def decay_plan(*, scope: NightlyScope, as_of: datetime, propose_to: uuid.UUID | None = None) -> DecayPlan:
    """Reads the scope's rows and computes their decay and low-effectiveness flag as of `as_of`. With `propose_to`
    (a dream run), a row that would cross the decay floor is proposed to fade instead."""
    items = list(scope.items().exclude(type=KnowledgeType.DECISION).exclude(pinned=True).only(
        "id", "owner_id", "project_id", "type", "trigger", "content", "tags", "success_count", "failure_count",
        "last_used_at", "created_at", "decay_score"))
    plan, floor = DecayPlan(rows=items), decay_floor()
    for item in items:
        score = decay_score(item, as_of)
        if propose_to is not None and score <= floor < item.decay_score:
            score = _propose_retirement(propose_to, item, score)
        if score != item.decay_score:
            plan.scores[item.id] = score
        flagged, was = _flagged(item), LOW_EFFECTIVENESS_TAG in item.tags
        if flagged != was:
            (plan.flag if flagged else plan.unflag).append(item.id)
    return plan


def decay_apply(plan: DecayPlan) -> int:
    """Writes the plan: each score, and the flag added or removed in SQL on the tags as they are now. Writing back
    the tags as read lost a tag added since (a reaffirmed rule's, an approved age-out's `aged_out`, which then
    halved the row's confidence a second time). Rows are written in key order, as a session's credit locks them."""
    rows = sorted((KnowledgeItem(id=pk, decay_score=score) for pk, score in plan.scores.items()), key=lambda r: r.id)
    with transaction.atomic():
        KnowledgeItem.objects.bulk_update(rows, ["decay_score"], batch_size=500)
        tag, tags = Value(LOW_EFFECTIVENESS_TAG), KnowledgeItem._meta.get_field("tags")
        KnowledgeItem.objects.filter(id__in=plan.flag).exclude(tags__contains=[LOW_EFFECTIVENESS_TAG]).update(
            tags=Func(F("tags"), tag, function="array_append", output_field=tags))
        KnowledgeItem.objects.filter(id__in=plan.unflag).update(
            tags=Func(F("tags"), tag, function="array_remove", output_field=tags))
    return len(set(plan.scores) | set(plan.flag) | set(plan.unflag))


def decay_scope_run(*, scope: NightlyScope, as_of: datetime, propose_to: uuid.UUID | None = None) -> DecayReport:
    """Recomputes decay and the low-effectiveness flag for one scope as of `as_of` (same input, same result)."""
    plan = decay_plan(scope=scope, as_of=as_of, propose_to=propose_to)
    changed, floor = decay_apply(plan), decay_floor()
    scores = {item.id: plan.scores.get(item.id, item.decay_score) for item in plan.rows}
    flagged = sum(1 for i in plan.rows if (LOW_EFFECTIVENESS_TAG in i.tags or i.id in plan.flag)
                  and i.id not in plan.unflag)
    report = DecayReport(rows=len(plan.rows), changed=changed,
                         retired=sum(1 for score in scores.values() if score <= floor), flagged=flagged)
    log_op(logger, "decay.run", scope=scope.key, asOf=as_of.isoformat(), rows=report.rows, changed=report.changed,
           retired=report.retired, flagged=report.flagged)
    return report
