"""Wire shapes of the knowledge, action item and peer card API (camelCase, like the MCP tools)."""
# ruff: noqa: N815

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema

from knowledge.models import RATIONALE_MAX, RULE_MAX, RULE_MIN, TAG_MAX, TAGS_MAX, TRIGGER_MAX, KnowledgeItem
from knowledge.selectors.live import PeerCardView
from knowledge.selectors.search import KnowledgeHit
from projects.api.schemas import StrictIn
from projects.models import STACK_NAME_MAX

Teachable = Literal["reflex", "recipe", "heuristic", "principle", "anti_principle", "action_item"]
Tag = Annotated[str, Field(max_length=TAG_MAX)]  # declared per item, so the API's schema shows the cap
KnowledgeKind = Literal[
    "reflex", "recipe", "heuristic", "principle", "anti_principle", "rule", "decision", "skill", "action_item"
]


class KnowledgeOut(Schema):
    id: uuid.UUID
    type: str
    trigger: str
    rule: str
    rationale: str
    tags: list[str]
    projectId: uuid.UUID | None
    isOwn: bool
    source: str
    stage: str | None
    confidence: float
    successCount: int
    failureCount: int
    framework: str
    language: str
    lastUsedAt: datetime | None
    createdAt: datetime
    updatedAt: datetime
    reviewStatus: Literal["pending", "approved", "rejected"] | None = Field(None, description=(
        "pending: a member's rule waiting for an org owner (only its author sees it); null: no review needed"))

    @staticmethod
    def fields_of(row: KnowledgeItem, user_id: Any) -> dict[str, Any]:
        return {
            "id": row.id, "type": row.type, "trigger": row.trigger, "rule": row.content, "rationale": row.rationale,
            "tags": list(row.tags), "projectId": row.project_id, "isOwn": row.owner_id == user_id,
            "source": row.source, "stage": row.stage or None, "confidence": row.confidence,
            "successCount": row.success_count, "failureCount": row.failure_count, "framework": row.framework,
            "language": row.language, "lastUsedAt": row.last_used_at, "createdAt": row.created_at,
            "updatedAt": row.updated_at, "reviewStatus": row.review_status or None,
        }

    @staticmethod
    def of(row: KnowledgeItem, user_id: Any) -> KnowledgeOut:
        return KnowledgeOut(**KnowledgeOut.fields_of(row, user_id))


class KnowledgePage(Schema):
    items: list[KnowledgeOut]
    nextCursor: str | None


class KnowledgeHitOut(Schema):
    id: uuid.UUID
    type: str
    trigger: str
    rule: str
    rationale: str
    confidence: float
    tags: list[str]
    projectId: uuid.UUID | None
    score: float
    why: dict[str, float] = Field(description="the score's terms (explain=true)")
    author: str | None = Field(None, description=(
        "who taught it when it is another member (their confidence counts at 0.8 for you); null: your own"))

    @staticmethod
    def of(hit: KnowledgeHit) -> KnowledgeHitOut:
        return KnowledgeHitOut(
            id=hit.id, type=hit.type, trigger=hit.trigger, rule=hit.content, rationale=hit.rationale,
            confidence=hit.confidence, tags=hit.tags, projectId=hit.project_id, score=hit.score,
            why={k: float(v) for k, v in hit.explain.items()}, author=hit.author or None,
        )


class KnowledgeSearchOut(Schema):
    items: list[KnowledgeHitOut]
    retrieval: str = Field(description="hybrid; fts_only when vectors were unavailable; vector_only when the "
                                       "full-text search failed")
    notice: str | None


class TeachIn(StrictIn):
    rule: str = Field(min_length=RULE_MIN, max_length=RULE_MAX)
    trigger: str = Field("", max_length=TRIGGER_MAX)
    rationale: str = Field("", max_length=RATIONALE_MAX)
    type: Teachable = "heuristic"
    tags: list[Tag] = Field(default_factory=list, max_length=TAGS_MAX)
    projectId: uuid.UUID | None = Field(None, description="default: the token's project, else your first project")
    framework: str = Field("", max_length=STACK_NAME_MAX)
    language: str = Field("", max_length=STACK_NAME_MAX)
    supersedesKnowledgeId: uuid.UUID | None = Field(None, description="retire this row of yours (same project)")
    scope: Literal["project", "user"] = Field("project", description="user: in every project of yours")


class TaughtOut(KnowledgeOut):
    supersededId: uuid.UUID | None


class KnowledgeUpdateIn(StrictIn):
    rule: str | None = Field(None, min_length=RULE_MIN, max_length=RULE_MAX)
    trigger: str | None = Field(None, max_length=TRIGGER_MAX)
    rationale: str | None = Field(None, max_length=RATIONALE_MAX)
    type: KnowledgeKind | None = None
    tags: list[Tag] | None = Field(None, max_length=TAGS_MAX)
    confidence: float | None = Field(None, ge=0.0, le=1.0, strict=True)  # a number: `false` is not 0


class SupersedeIn(StrictIn):
    rule: str = Field(min_length=RULE_MIN, max_length=RULE_MAX)
    trigger: str | None = Field(None, max_length=TRIGGER_MAX, description="default: the old row's trigger")
    rationale: str | None = Field(None, max_length=RATIONALE_MAX, description="default: the old row's rationale")


class ActionItemOut(Schema):
    id: uuid.UUID
    rule: str
    tags: list[str]
    projectId: uuid.UUID
    blocker: bool
    createdAt: datetime
    resolvedAt: datetime | None

    @staticmethod
    def of(row: KnowledgeItem) -> ActionItemOut:
        assert row.project_id is not None  # action items are always taught into a project
        return ActionItemOut(id=row.id, rule=row.content, tags=list(row.tags), projectId=row.project_id,
                             blocker="blocker" in row.tags, createdAt=row.created_at, resolvedAt=row.deleted_at)


class ActionItemPage(Schema):
    items: list[ActionItemOut]
    nextCursor: str | None


class PeerCardOut(Schema):
    email: str
    facts: dict[str, str]
    updatedAt: datetime | None

    @staticmethod
    def of(card: PeerCardView) -> PeerCardOut:
        return PeerCardOut(email=card.email, facts=card.facts, updatedAt=card.updated_at)


class PeerCardIn(StrictIn):
    facts: dict[str, str] = Field(description="the whole card (at most 40 facts); keys left out are removed")
