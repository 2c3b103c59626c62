"""Reads of knowledge, always inside the caller's scope (applied in SQL)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from brain.text import text_storable
from knowledge.models import KnowledgeType
from knowledge.scoring import Context, Weights, cut, rescore
from knowledge.search import Fusion, Mode, Scope, hybrid_candidates
from projects.scope import Principal
from projects.selectors.accounts import project_visible, projects_visible

KNOWLEDGE_TABLE = "knowledge_knowledgeitem"
_COLUMNS = (
    "t.id, t.owner_id, t.project_id, t.type, t.trigger, t.content, t.rationale, t.tags, t.source, t.stage, "
    "t.confidence, t.success_count, t.failure_count, t.decay_score, t.last_used_at, t.created_at, "
    "t.framework, t.language"
)


@dataclass
class KnowledgeHit:
    id: uuid.UUID
    type: str
    trigger: str
    content: str
    rationale: str
    confidence: float
    tags: list[str]
    project_id: uuid.UUID | None
    score: float
    explain: dict[str, Any]


@dataclass
class KnowledgeSearchResult:
    hits: list[KnowledgeHit]
    retrieval: str
    notice: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def fusion_from_settings(**overrides: Any) -> Fusion:
    conf = settings.BRAIN_RETRIEVAL
    values = {"rrf_k": conf["rrf_k"], "weight_vector": conf["weight_vector"], "weight_fts": conf["weight_fts"],
              "candidates": conf["candidates"], "max_distance": conf["max_distance"],
              "fts_postings": conf["fts_postings"], "vector_length_b": conf["vector_length_b"]}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Fusion(**values)


def knowledge_scope(*, principal: Principal, project_id: uuid.UUID | str | None = None) -> Scope:
    """Rows the caller may retrieve: visible projects' rows plus the caller's own project-less rows,
    narrowed to one visible project when given; never deleted, superseded, decayed out or action items."""
    if project_id is not None:
        project_ids = [project_visible(principal=principal, project_id=project_id).id]
    else:
        project_ids = list(projects_visible(principal=principal).values_list("id", flat=True))
    sql = (
        "(t.project_id = ANY(%(scope_projects)s::uuid[]) OR (t.project_id IS NULL AND t.owner_id = %(scope_user)s))"
        " AND t.deleted_at IS NULL AND t.superseded_by_id IS NULL AND t.type <> 'action_item'"
        " AND (t.decay_score > %(decay_floor)s OR t.type = 'decision')"
    )
    params = {"scope_projects": project_ids, "scope_user": principal.user.id,
              "decay_floor": settings.BRAIN_RETRIEVAL["decay_floor"]}
    return Scope(sql, params, project_ids=tuple(project_ids), unassigned=True)


def knowledge_search(
    *, principal: Principal, query: str, limit: int = 5, project_id: uuid.UUID | str | None = None,
    types: list[str] | None = None, framework: str = "", language: str = "", mode: Mode = "hybrid",
    explain: bool = False, weights: Weights | None = None, fusion: Fusion | None = None,
) -> KnowledgeSearchResult:
    """The best `limit` items for `query` in the caller's scope, re-scored, floored and diversified."""
    text_storable(query=query, types=types, framework=framework, language=language)
    scope = knowledge_scope(principal=principal, project_id=project_id)
    if types:
        scope = scope.narrowed("t.type = ANY(%(types)s)", types=list(types))
    weights = weights or Weights.from_settings()
    found = hybrid_candidates(
        table=KNOWLEDGE_TABLE, columns=_COLUMNS, scope=scope, query=query, mode=mode,
        fusion=fusion or fusion_from_settings(),
    )
    context = Context(framework=framework, language=language, project_id=_uuid_or_none(project_id))
    now = timezone.now()
    scored = []
    for cand in found.candidates:
        score, terms = rescore(rrf=cand.rrf, rrf_max=found.rrf_max, row=cand.row, context=context,
                               weights=weights, now=now)
        terms.update(vec_rank=cand.vec_rank or 0, fts_rank=cand.fts_rank or 0, rrf=round(cand.rrf, 6))
        scored.append((score, cand.row["type"], _hit(cand.row, score, terms if explain else {})))
    hits = cut(scored, floor=weights.floor, max_per_type=weights.max_per_type, limit=limit)
    return KnowledgeSearchResult(hits=hits, retrieval=found.retrieval, notice=found.notice,
                                 meta={"timings_ms": found.timings_ms})


def _uuid_or_none(value: uuid.UUID | str | None) -> uuid.UUID | None:
    return uuid.UUID(str(value)) if value is not None else None


def _hit(row: dict[str, Any], score: float, explain: dict[str, Any]) -> KnowledgeHit:
    return KnowledgeHit(
        id=row["id"], type=row["type"], trigger=row["trigger"], content=row["content"], rationale=row["rationale"],
        confidence=float(row["confidence"]), tags=list(row["tags"] or []), project_id=row["project_id"],
        score=round(score, 6), explain=explain,
    )


RETRIEVABLE_TYPES = [t for t in KnowledgeType.values if t != KnowledgeType.ACTION_ITEM]
