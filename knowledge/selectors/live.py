"""The caller's style (peer card + strongest reflexes) and skills, always inside the caller's scope."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone

from brain.errors import ValidationFailed
from brain.text import text_storable
from knowledge.models import KnowledgeItem, KnowledgeType, PeerCard, SkillStage, review_clear, review_usable_by
from knowledge.scoring import Context, Weights, rescore_candidates
from knowledge.search import hybrid_candidates
from knowledge.selectors.search import KNOWLEDGE_TABLE, OTHERS_CONFIDENCE, fusion_from_settings, knowledge_scope
from projects.scope import Principal
from projects.selectors.accounts import projects_visible

REFLEX_MIN_CONFIDENCE = 0.7
MAX_REFLEXES = 30
OFFERED_STAGES = [SkillStage.KNOWLEDGE.value, SkillStage.WISDOM.value]
_SKILL_COLUMNS = ("t.id, t.type, t.trigger, t.content, t.rationale, t.stage, t.confidence, t.success_count, "
                  "t.failure_count, t.last_used_at, t.created_at, t.project_id, t.framework, t.language")


def personal_rows(principal: Principal) -> Q:
    """The caller's own project-less rows, which every read adds to its projects' rows; nothing through a
    project-scoped token, whose reads stop at its project (`Principal.reads_personal`)."""
    return Q(project__isnull=True, owner=principal.user) if principal.reads_personal else Q(pk__in=[])


def knowledge_live(*, principal: Principal) -> QuerySet[KnowledgeItem]:
    """Rows the caller may read: visible projects' rows plus their own project-less rows (not through a project-scoped
    token), not retired; a row held for review (pending or rejected) only for its author."""
    visible = projects_visible(principal=principal).values("id")
    return KnowledgeItem.objects.filter(
        Q(project__in=visible) | personal_rows(principal),
        review_clear() | Q(owner=principal.user),
        deleted_at__isnull=True, superseded_by__isnull=True,
    )


@dataclass(frozen=True)
class PeerCardView:
    """The caller's peer card; a user who never wrote one has no facts and no update time."""

    email: str
    facts: dict[str, str]
    updated_at: datetime | None


@dataclass(frozen=True)
class UserStyle:
    peer_card: PeerCardView
    reflexes: list[KnowledgeItem]


@dataclass(frozen=True)
class SkillHit:
    id: uuid.UUID
    type: str
    stage: str
    trigger: str
    content: str
    rationale: str
    confidence: float
    score: float


@dataclass(frozen=True)
class SkillsFound:
    skills: list[SkillHit]
    retrieval: str
    notice: str


def peer_card_of(*, principal: Principal) -> PeerCardView:
    card = PeerCard.objects.filter(user=principal.user).first()
    return PeerCardView(email=principal.user.email, facts=dict(card.facts) if card else {},
                        updated_at=card.updated_at if card else None)


def user_style(*, principal: Principal) -> UserStyle:
    """Peer card plus up to 30 reflexes at confidence >= 0.7, highest first; another member's reflex is shown at
    OTHERS_CONFIDENCE of its stored confidence (as retrieval counts it; the row itself is not changed)."""
    reflexes = list(knowledge_live(principal=principal).filter(
        review_usable_by(principal.user), type=KnowledgeType.REFLEX, confidence__gte=REFLEX_MIN_CONFIDENCE
    ).order_by("-confidence", "-created_at", "id")[:MAX_REFLEXES])
    for row in reflexes:
        if row.owner_id != principal.user.pk:
            row.confidence = round(row.confidence * OTHERS_CONFIDENCE, 4)
    return UserStyle(peer_card=peer_card_of(principal=principal), reflexes=reflexes)


def skills_active(*, principal: Principal, limit: int = 50) -> list[KnowledgeItem]:
    """Skills mature enough to offer (knowledge and wisdom stages), most confident first."""
    rows = knowledge_live(principal=principal).filter(
        review_usable_by(principal.user), stage__in=OFFERED_STAGES).exclude(
        type=KnowledgeType.ACTION_ITEM).order_by("-confidence", "-created_at", "id")[:limit]
    return list(rows)


def skills_find(*, principal: Principal, query: str, limit: int = 5) -> SkillsFound:
    """Top `limit` offered skills for `query`, hybrid-ranked like knowledge (falls back to text search)."""
    text_storable(query=query)
    if not query.strip():
        raise ValidationFailed("query must not be empty: describe the task the skill should cover")
    scope = knowledge_scope(principal=principal).narrowed("t.stage = ANY(%(stages)s)", stages=OFFERED_STAGES)
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns=_SKILL_COLUMNS, scope=scope, query=query,
                              mode="hybrid", fusion=fusion_from_settings())
    scored = rescore_candidates(found, context=Context(), weights=Weights.from_settings(), now=timezone.now(),
                                explain=False)
    scored.sort(key=lambda entry: -entry[0])
    skills = [
        SkillHit(id=r["id"], type=r["type"], stage=r["stage"], trigger=r["trigger"], content=r["content"],
                 rationale=r["rationale"], confidence=float(r["confidence"]), score=round(s, 4))
        for s, _, r in scored[:limit]
    ]
    return SkillsFound(skills=skills, retrieval=found.retrieval, notice=found.notice)
