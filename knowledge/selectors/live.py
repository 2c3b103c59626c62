"""The caller's style (peer card + strongest reflexes) and skills, always inside the caller's scope."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from brain.errors import ValidationFailed
from brain.text import text_storable
from knowledge.models import KnowledgeItem, KnowledgeType, PeerCard, SkillStage
from knowledge.scoring import Context, Weights, rescore
from knowledge.search import hybrid_candidates
from knowledge.selectors.search import KNOWLEDGE_TABLE, fusion_from_settings, knowledge_scope
from projects.scope import Principal
from projects.selectors.accounts import projects_visible

REFLEX_MIN_CONFIDENCE = 0.7
MAX_REFLEXES = 30
OFFERED_STAGES = [SkillStage.KNOWLEDGE.value, SkillStage.WISDOM.value]
_SKILL_COLUMNS = ("t.id, t.type, t.trigger, t.content, t.rationale, t.stage, t.confidence, t.success_count, "
                  "t.failure_count, t.last_used_at, t.created_at, t.project_id, t.framework, t.language")


def knowledge_live(*, principal: Principal) -> QuerySet[KnowledgeItem]:
    """Rows the caller may read: visible projects' rows plus their own project-less rows, not retired."""
    visible = projects_visible(principal=principal).values("id")
    return KnowledgeItem.objects.filter(
        Q(project__in=visible) | Q(project__isnull=True, owner=principal.user),
        deleted_at__isnull=True, superseded_by__isnull=True,
    )


def peer_card_of(*, principal: Principal) -> dict[str, Any]:
    card = PeerCard.objects.filter(user=principal.user).first()
    return {"email": principal.user.email, "facts": dict(card.facts) if card else {},
            "updatedAt": card.updated_at.isoformat() if card else None}


def _item(row: KnowledgeItem) -> dict[str, Any]:
    return {"id": str(row.id), "type": row.type, "trigger": row.trigger, "rule": row.content,
            "rationale": row.rationale, "confidence": row.confidence, "stage": row.stage or None,
            "projectId": str(row.project_id) if row.project_id else None}


def user_style(*, principal: Principal) -> dict[str, Any]:
    """Peer card plus up to 30 reflexes at confidence >= 0.7, highest first."""
    reflexes = knowledge_live(principal=principal).filter(
        type=KnowledgeType.REFLEX, confidence__gte=REFLEX_MIN_CONFIDENCE
    ).order_by("-confidence", "-created_at", "id")[:MAX_REFLEXES]
    return {"peerCard": peer_card_of(principal=principal), "reflexes": [_item(r) for r in reflexes]}


def skills_active(*, principal: Principal, limit: int = 50) -> list[dict[str, Any]]:
    """Skills mature enough to offer (knowledge and wisdom stages), most confident first."""
    rows = knowledge_live(principal=principal).filter(stage__in=OFFERED_STAGES).exclude(
        type=KnowledgeType.ACTION_ITEM).order_by("-confidence", "-created_at", "id")[:limit]
    return [_item(r) for r in rows]


def skills_find(*, principal: Principal, query: str, limit: int = 5) -> dict[str, Any]:
    """Top `limit` offered skills for `query`, hybrid-ranked like knowledge (falls back to text search)."""
    text_storable(query=query)
    if not query.strip():
        raise ValidationFailed("query must not be empty: describe the task the skill should cover")
    scope = knowledge_scope(principal=principal).narrowed("t.stage = ANY(%(stages)s)", stages=OFFERED_STAGES)
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns=_SKILL_COLUMNS, scope=scope, query=query,
                              mode="hybrid", fusion=fusion_from_settings())
    weights, now = Weights.from_settings(), timezone.now()
    scored = []
    for cand in found.candidates:
        score, _ = rescore(rrf=cand.rrf, rrf_max=found.rrf_max, row=cand.row, context=Context(),
                           weights=weights, now=now)
        scored.append((score, cand.row))
    scored.sort(key=lambda pair: -pair[0])
    skills = [
        {"id": str(r["id"]), "type": r["type"], "stage": r["stage"], "trigger": r["trigger"], "rule": r["content"],
         "rationale": r["rationale"], "confidence": float(r["confidence"]), "score": round(s, 4)}
        for s, r in scored[:limit]
    ]
    return {"skills": skills, "retrieval": found.retrieval, "notice": found.notice or None}
