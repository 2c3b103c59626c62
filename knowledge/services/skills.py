"""Skills grow up: a learned recipe moves inbox -> notes -> knowledge -> wisdom as it keeps working.

    inbox     -> notes      used in 1 successful session
    notes     -> knowledge  used in >= 3 successful sessions at confidence >= 0.7
    knowledge -> wisdom     used in >= 10 successful sessions at confidence >= 0.9, success rate >= 0.8
A recipe or skill approved in the review queue starts at `knowledge`. Only `knowledge` and `wisdom` are
offered by brain_find_skill and brain://user/active-skills. A stage is never lowered here; decay and
curation retire rows instead. `success_count` counts successful sessions that used the row (honest credit
adds at most one per session) and a learned duplicate merged into it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from django.db.models import F, Q

from brain.logs import log_op
from knowledge.models import KnowledgeItem, KnowledgeType, SkillStage

logger = logging.getLogger(__name__)
SKILL_TYPES = (KnowledgeType.RECIPE, KnowledgeType.SKILL)
# (from, to, condition) in promotion order; one call may move a row several steps.
LADDER: list[tuple[str, str, Q]] = [
    (SkillStage.INBOX, SkillStage.NOTES, Q(success_count__gte=1)),
    (SkillStage.NOTES, SkillStage.KNOWLEDGE, Q(success_count__gte=3, confidence__gte=0.7)),
    (SkillStage.KNOWLEDGE, SkillStage.WISDOM,
     Q(success_count__gte=10, confidence__gte=0.9) & Q(success_count__gte=4 * F("failure_count"))),
]


def skills_promote(*, ids: Iterable[uuid.UUID], stages: set[str] | None = None) -> int:
    """Moves these rows up every stage they now qualify for; returns how many steps were taken. `stages`: the
    stages of the live rows among `ids` when the caller has them (a close's credit returns them), else read."""
    ids = list(ids)
    if not ids:
        return 0
    # The stages present: most credited rows are no skills, and a step nobody stands on needs no UPDATE.
    if stages is None:
        stages = set(KnowledgeItem.objects.filter(id__in=ids, deleted_at__isnull=True).values_list("stage", flat=True))
    present = stages & {source for source, _, _ in LADDER}
    steps = 0
    for source, target, condition in LADDER:
        if source not in present:
            continue
        moved = KnowledgeItem.objects.filter(condition, id__in=ids, stage=source, deleted_at__isnull=True).update(
            stage=target)
        if moved:
            present.add(target)  # one call may move a row several steps
            log_op(logger, "skill.promoted", stage=str(target), count=moved)
        steps += moved
    return steps
