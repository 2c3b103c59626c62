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
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

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


def _flagged_tags(item: KnowledgeItem) -> list[str]:
    rate = effectiveness(item)
    tags = [t for t in item.tags if t != LOW_EFFECTIVENESS_TAG]
    return [*tags, LOW_EFFECTIVENESS_TAG] if rate is not None and rate < LOW_EFFECTIVENESS else tags


def _propose_retirement(run_id: uuid.UUID, item: KnowledgeItem, score: float) -> float:
    """The dream cycle asks before a row leaves retrieval: the fade is proposed, the score stays."""
    propose_fade(run_id, item, RETIRE, f"Unused since {(item.last_used_at or item.created_at):%Y-%m-%d}: its decay "
                 f"would fall to {score:.2f}, under the floor, and it would leave retrieval.", decay=score)
    return item.decay_score


def decay_scope_run(*, scope: NightlyScope, as_of: datetime, propose_to: uuid.UUID | None = None) -> DecayReport:
    """Recomputes decay and the low-effectiveness flag for one scope as of `as_of` (same input, same result).
    With `propose_to` (a dream run), a row that would cross the decay floor is proposed to fade instead."""
    items = list(scope.items().exclude(type=KnowledgeType.DECISION).exclude(pinned=True).only(
        "id", "owner_id", "project_id", "type", "trigger", "content", "tags", "success_count", "failure_count",
        "last_used_at", "created_at", "decay_score"))
    changed, floor = [], decay_floor()
    for item in items:
        score, tags = decay_score(item, as_of), _flagged_tags(item)
        if propose_to is not None and score <= floor < item.decay_score:
            score = _propose_retirement(propose_to, item, score)
        if score != item.decay_score or tags != item.tags:
            item.decay_score, item.tags = score, tags
            changed.append(item)
    with transaction.atomic():
        KnowledgeItem.objects.bulk_update(changed, ["decay_score", "tags"], batch_size=500)
    report = DecayReport(
        rows=len(items), changed=len(changed),
        retired=sum(1 for i in items if i.decay_score <= floor),
        flagged=sum(1 for i in items if LOW_EFFECTIVENESS_TAG in i.tags),
    )
    log_op(logger, "decay.run", scope=scope.key, asOf=as_of.isoformat(), rows=report.rows, changed=report.changed,
           retired=report.retired, flagged=report.flagged)
    return report
