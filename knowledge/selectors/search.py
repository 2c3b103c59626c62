"""Reads of knowledge, always inside the caller's scope (applied in SQL)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.utils import timezone

from brain.config import overridden
from brain.text import text_storable
from knowledge.injection import DEFAULT_BUDGET
from knowledge.models import DECAY_FLOOR, REVIEW_USABLE_SQL, KnowledgeType, ScopeRows
from knowledge.nightly import NightlyScope
from knowledge.scoring import Context, Weights, cut, rescore_candidates
from knowledge.search import CandidateSet, Fusion, Mode, Scope, hybrid_candidates
from knowledge.selectors.review import author_labels
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import project_visible, visible_project_ids

KNOWLEDGE_TABLE = "knowledge_knowledgeitem"
# Rows retrieval may ever return, as `knowledge_vector_scope`'s predicate states them (with a vector).
_LIVE = "t.deleted_at IS NULL AND t.superseded_by_id IS NULL AND t.type <> 'action_item'"
# The share of its stored confidence another member's row has for a viewer (see `others_discounted`).
OTHERS_CONFIDENCE = 0.8
_COLUMNS = (
    "t.id, t.owner_id, t.project_id, t.type, t.trigger, t.content, t.rationale, t.tags, t.source, t.stage, "
    "t.confidence, t.success_count, t.failure_count, t.decay_score, t.last_used_at, t.created_at, "
    "t.framework, t.language, t.embedding IS NULL AS vector_pending"  # the null bitmap only: no vector is read
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
    owner_id: uuid.UUID | None = None
    author: str = ""  # who taught it, when not the caller (injections show it under "From your team")
    framework: str = ""  # the stack it was taught for (an open leaves out rows of another stack)
    vector_pending: bool = False  # written a moment ago: found by its words alone until the batcher embeds it


@dataclass
class KnowledgeSearchResult:
    hits: list[KnowledgeHit]
    retrieval: str
    notice: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def fusion_from_settings(**overrides: Any) -> Fusion:
    """Fusion's code defaults, then the `BRAIN_RETRIEVAL_*` overrides the environment sets, then the caller's
    (None: not overridden)."""
    configured = overridden(Fusion(), settings.BRAIN_RETRIEVAL)
    return replace(configured, **{name: value for name, value in overrides.items() if value is not None})


def decay_floor() -> float:
    """The decay score at or under which a row leaves retrieval: DECAY_FLOOR unless the environment overrides it."""
    value = settings.BRAIN_RETRIEVAL.get("decay_floor")
    return DECAY_FLOOR if value is None else float(value)


def injection_budget() -> int:
    """Tokens of injection text a session gets when the caller names no budget: DEFAULT_BUDGET unless overridden."""
    value = settings.BRAIN_RETRIEVAL.get("budget_tokens")
    return DEFAULT_BUDGET if value is None else int(value)


def others_discounted(found: CandidateSet, *, viewer_id: uuid.UUID) -> None:
    """Another member's row counts at OTHERS_CONFIDENCE of its stored confidence for this viewer (its author
    still sees the stored value): at equal relevance the viewer's own rules come first, and a colleague's rule
    never reaches the viewer at full confidence."""
    for cand in found.candidates:
        if cand.row.get("owner_id") not in (None, viewer_id):
            cand.row["confidence"] = round(float(cand.row["confidence"]) * OTHERS_CONFIDENCE, 4)


def knowledge_scope(*, principal: Principal, project_id: uuid.UUID | str | None = None,
                    project: Project | None = None) -> Scope:
    """Rows the caller may retrieve: visible projects' rows plus the caller's own project-less rows (not through a
    project-scoped token: `Principal.reads_personal`),
    narrowed to one visible project when given; never deleted, superseded, decayed out or action items.
    `project`: one the caller has just resolved as visible to `principal` (a session's open), not read again."""
    if project is not None:
        project_ids = [project.id]
    elif project_id is not None:
        project_ids = [project_visible(principal=principal, project_id=project_id).id]
    else:
        project_ids = visible_project_ids(principal=principal)
    personal = " OR (t.project_id IS NULL AND t.owner_id = %(scope_user)s)" if principal.reads_personal else ""
    sql = (
        f"(t.project_id = ANY(%(scope_projects)s::uuid[]){personal})"
        f" AND {_LIVE}"
        " AND (t.decay_score > %(decay_floor)s OR t.type = 'decision')"
        f" AND {REVIEW_USABLE_SQL}"  # a member's rule waiting for review reaches only its author
    )
    params = {"scope_projects": project_ids, "scope_user": principal.user.id,
              "decay_floor": decay_floor()}
    scope = Scope(sql, params, project_ids=tuple(project_ids), unassigned=principal.reads_personal,
                  prefilter=_vector_prefilter(reads_personal=principal.reads_personal))
    return _rows_kept(scope)


def _vector_prefilter(*, reads_personal: bool) -> tuple[str, ...]:
    """The scope as conditions on `knowledge_vector_scope`'s columns and predicate, one per index scan: the visible
    projects' rows and the caller's own project-less rows (an OR of the two would read the table through a bitmap)."""
    projects = f"t.project_id = ANY(%(scope_projects)s::uuid[]) AND {_LIVE}"
    return (projects, f"t.project_id IS NULL AND t.owner_id = %(scope_user)s AND {_LIVE}") if reads_personal else (
        projects,)


def _rows_kept(scope: Scope) -> Scope:
    """`scope` with its size read from the counts the database keeps per scope (`ScopeRows`, keyed as the nightly
    jobs key scopes), plus the reader's own rows held for review (the partial index of pending rows), where those
    counts use the floor in force."""
    if scope.params["decay_floor"] != DECAY_FLOOR:
        return scope
    scopes = [NightlyScope(project_id=pk, owner_id=None) for pk in scope.project_ids]
    if scope.unassigned:
        scopes.append(NightlyScope(project_id=None, owner_id=scope.params["scope_user"]))
    held = (f"SELECT count(*) FROM {KNOWLEDGE_TABLE} t WHERE t.review_status = 'pending' "  # noqa: S608
            f"AND t.owner_id = %(scope_user)s AND {scope.sql}")
    rows_sql = (f"((SELECT coalesce(sum(c.rows), 0) FROM {ScopeRows._meta.db_table} c "  # noqa: S608
                f"WHERE c.scope = ANY(%(scope_keys)s::text[])) + ({held}))")
    return replace(scope, params={**scope.params, "scope_keys": [kept.key for kept in scopes]}, rows_sql=rows_sql)


def knowledge_search(
    *, principal: Principal, query: str, limit: int = 5, project_id: uuid.UUID | str | None = None,
    types: list[str] | None = None, framework: str = "", language: str = "", mode: Mode = "hybrid",
    explain: bool = False, weights: Weights | None = None, fusion: Fusion | None = None,
    project: Project | None = None, tag: str = "", min_confidence: float | None = None,
) -> KnowledgeSearchResult:
    """The best `limit` items for `query` in the caller's scope, re-scored, floored and diversified.
    `project` stands for `project_id` when the caller has just resolved it as visible (`knowledge_scope`).
    `tag` and `min_confidence` narrow the scope itself (the dashboard's filters), not the ranked hits."""
    text_storable(query=query, types=types, framework=framework, language=language, tag=tag)
    project_id = project.id if project is not None else project_id
    scope = knowledge_scope(principal=principal, project_id=project_id, project=project)
    if types:
        scope = scope.narrowed("t.type = ANY(%(types)s)", types=list(types))
    if tag:
        scope = scope.narrowed("t.tags @> ARRAY[%(tag)s]::varchar[]", tag=tag.strip().lower())
    if min_confidence is not None:
        scope = scope.narrowed("t.confidence >= %(min_confidence)s", min_confidence=min_confidence)
    weights = weights or Weights.from_settings()
    found = hybrid_candidates(
        table=KNOWLEDGE_TABLE, columns=_COLUMNS, scope=scope, query=query, mode=mode,
        fusion=fusion or fusion_from_settings(),
    )
    others_discounted(found, viewer_id=principal.user.pk)
    context = Context(framework=framework, language=language, project_id=_uuid_or_none(project_id))
    scored = [(score, row["type"], (row, score, terms)) for score, terms, row in rescore_candidates(
        found, context=context, weights=weights, now=timezone.now(), explain=explain)]
    # Only the kept candidates become hits (an open keeps 5 of 50).
    hits = [_hit(*kept) for kept in cut(scored, floor=weights.floor, max_per_type=weights.max_per_type, limit=limit)]
    labels = author_labels(owner_ids=[h.owner_id for h in hits if h.owner_id], viewer=principal.user)
    for hit in hits:
        hit.author = labels.get(hit.owner_id, "") if hit.owner_id else ""
    return KnowledgeSearchResult(hits=hits, retrieval=found.retrieval, notice=found.notice,
                                 meta={"timings_ms": found.timings_ms})


def _uuid_or_none(value: uuid.UUID | str | None) -> uuid.UUID | None:
    return uuid.UUID(str(value)) if value is not None else None


def _hit(row: dict[str, Any], score: float, explain: dict[str, Any]) -> KnowledgeHit:
    return KnowledgeHit(
        id=row["id"], type=row["type"], trigger=row["trigger"], content=row["content"], rationale=row["rationale"],
        confidence=float(row["confidence"]), tags=list(row["tags"] or []), project_id=row["project_id"],
        score=round(score, 6), explain=explain, owner_id=row["owner_id"], framework=row["framework"] or "",
        vector_pending=bool(row["vector_pending"]),
    )


RETRIEVABLE_TYPES = [t for t in KnowledgeType.values if t != KnowledgeType.ACTION_ITEM]
