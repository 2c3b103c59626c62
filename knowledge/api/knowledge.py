"""/api/v1/knowledge: list, search, teach, update, supersede and delete, with the MCP tools' scope rules.

Reads go through `knowledge_live` (what brain_get_user_style reads) and `knowledge_search` (the engine
behind brain_retrieve_knowledge); creation is `knowledge_teach` (brain_teach_knowledge).
"""

from __future__ import annotations

import dataclasses
import uuid

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field as QField
from ninja import Query, Router, Status

from brain.errors import NotFound
from knowledge.api.schemas import (
    KnowledgeHitOut,
    KnowledgeKind,
    KnowledgeOut,
    KnowledgePage,
    KnowledgeSearchOut,
    KnowledgeUpdateIn,
    SupersedeIn,
    TaughtOut,
    TeachIn,
)
from knowledge.models import TAG_MAX, KnowledgeItem
from knowledge.scoring import Weights
from knowledge.search import QUERY_MAX
from knowledge.selectors.live import knowledge_live
from knowledge.selectors.review import review_queue
from knowledge.selectors.search import knowledge_search
from knowledge.services.curate import knowledge_delete, knowledge_edit, knowledge_supersede
from knowledge.services.promote import knowledge_promote
from knowledge.services.review import knowledge_review_decide
from knowledge.services.teach import Taught, knowledge_teach
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.pagination import MAX_LIMIT, PageLimit, paginate
from projects.api.schemas import TextQuery
from projects.models import STACK_NAME_MAX
from projects.scope import Principal
from projects.selectors.accounts import project_visible

router = Router(tags=["knowledge"])
ERRORS = {400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope}
KNOWLEDGE_KEYS = ("-created_at", "-id")
REVIEW_KEYS = ("created_at", "id")


class KnowledgeFilters(TextQuery):
    type: KnowledgeKind | None = None
    tag: str | None = QField(None, max_length=TAG_MAX)
    projectId: uuid.UUID | None = None  # noqa: N815
    q: str | None = QField(None, max_length=QUERY_MAX, description="rank by the retrieval engine (one page, no cursor)")
    cursor: str | None = None
    limit: PageLimit = None


class SearchQuery(TextQuery):
    q: str = QField(min_length=1, max_length=QUERY_MAX)
    projectId: uuid.UUID | None = None  # noqa: N815
    type: list[KnowledgeKind] | None = None
    framework: str = QField("", max_length=STACK_NAME_MAX)
    language: str = QField("", max_length=STACK_NAME_MAX)
    limit: int = QField(5, ge=1, le=20)
    explain: bool = True


def _filtered(principal: Principal, filters: KnowledgeFilters) -> QuerySet[KnowledgeItem]:
    qs = knowledge_live(principal=principal)
    if filters.projectId is not None:
        qs = qs.filter(project=project_visible(principal=principal, project_id=filters.projectId))
    if filters.type:
        qs = qs.filter(type=filters.type)
    if filters.tag:
        qs = qs.filter(tags__contains=[filters.tag.strip().lower()])
    return qs


def _ranked(principal: Principal, qs: QuerySet[KnowledgeItem], filters: KnowledgeFilters) -> list[KnowledgeItem]:
    """The filtered rows in the retrieval engine's order for `q` (a list: no per-type diversification)."""
    weights = dataclasses.replace(Weights.from_settings(), max_per_type=MAX_LIMIT)
    found = knowledge_search(principal=principal, query=str(filters.q), limit=MAX_LIMIT, weights=weights,
                             project_id=filters.projectId, types=[filters.type] if filters.type else None)
    ids = [hit.id for hit in found.hits]
    rows = {row.id: row for row in qs.filter(id__in=ids)}
    size = min(max(filters.limit or 50, 1), MAX_LIMIT)
    return [rows[i] for i in ids if i in rows][:size]


@router.get("", response={200: KnowledgePage, **ERRORS}, summary="List knowledge")
def list_knowledge(request: HttpRequest, filters: Query[KnowledgeFilters]) -> KnowledgePage:
    """Live rows (not deleted or superseded) of visible projects plus your own project-less rows, newest
    first. With `q`, the best matches in the retrieval engine's order (action items are never ranked)."""
    principal = principal_of(request)
    qs = _filtered(principal, filters)
    uid = principal.user.pk
    if filters.q and filters.q.strip():
        return KnowledgePage(items=[KnowledgeOut.of(r, uid) for r in _ranked(principal, qs, filters)], nextCursor=None)
    page = paginate(qs, keys=KNOWLEDGE_KEYS, cursor=filters.cursor, limit=filters.limit)
    return KnowledgePage(items=[KnowledgeOut.of(r, uid) for r in page.items], nextCursor=page.next_cursor)


@router.get("/search", response={200: KnowledgeSearchOut, **ERRORS}, summary="Search knowledge (with explain)")
def search_knowledge(request: HttpRequest, query: Query[SearchQuery]) -> KnowledgeSearchOut:
    """The retrieval engine brain_retrieve_knowledge uses: hybrid vector + full-text, re-scored, floored and
    diversified by type; `why` gives each score's terms."""
    found = knowledge_search(
        principal=principal_of(request), query=query.q, limit=query.limit, project_id=query.projectId,
        types=list(query.type) if query.type else None, framework=query.framework, language=query.language,
        explain=query.explain,
    )
    return KnowledgeSearchOut(items=[KnowledgeHitOut.of(h) for h in found.hits], retrieval=found.retrieval,
                              notice=found.notice or None)


def _taught(taught: Taught, principal: Principal) -> TaughtOut:
    row = KnowledgeOut.of(taught.item, principal.user.pk)
    return TaughtOut(**row.model_dump(), supersededId=taught.superseded_id)


@router.post("", response={201: TaughtOut, **ERRORS}, summary="Teach (create) knowledge")
def create_knowledge(request: HttpRequest, payload: TeachIn) -> Status[TaughtOut]:
    """brain_teach_knowledge: stored at confidence 1.0 in the token's project, `projectId`, or your first one."""
    principal = principal_of(request)
    taught = knowledge_teach(
        principal=principal, rule=payload.rule, type=payload.type, trigger=payload.trigger,
        rationale=payload.rationale, tags=payload.tags, framework=payload.framework, language=payload.language,
        project_id=str(payload.projectId) if payload.projectId else None,
        supersedes_knowledge_id=str(payload.supersedesKnowledgeId) if payload.supersedesKnowledgeId else None,
        scope=payload.scope,
    )
    return Status(201, _taught(taught, principal))


class ReviewFilters(TextQuery):
    projectId: uuid.UUID | None = None  # noqa: N815
    cursor: str | None = None
    limit: PageLimit = None


@router.get("/review", response={200: KnowledgePage, **ERRORS}, summary="Members' rules waiting for your review")
def list_review(request: HttpRequest, filters: Query[ReviewFilters]) -> KnowledgePage:
    """Pending rows in projects of orgs you own (orgs with `requireMemberReview`), oldest first."""
    principal = principal_of(request)
    qs = review_queue(principal=principal, project_id=filters.projectId)
    page = paginate(qs, keys=REVIEW_KEYS, cursor=filters.cursor, limit=filters.limit)
    return KnowledgePage(items=[KnowledgeOut.of(r, principal.user.pk) for r in page.items],
                         nextCursor=page.next_cursor)


@router.post("/{knowledge_id}/approve", response={200: KnowledgeOut, **ERRORS},
             summary="Approve a member's rule (org owners)")
def approve_knowledge(request: HttpRequest, knowledge_id: uuid.UUID) -> KnowledgeOut:
    """The row goes live for everyone in its project; a row it supersedes is retired now."""
    principal = principal_of(request)
    row = knowledge_review_decide(principal=principal, item_id=knowledge_id, approve=True)
    return KnowledgeOut.of(row, principal.user.pk)


@router.post("/{knowledge_id}/reject", response={200: KnowledgeOut, **ERRORS},
             summary="Reject a member's rule (org owners)")
def reject_knowledge(request: HttpRequest, knowledge_id: uuid.UUID) -> KnowledgeOut:
    """The row never reaches anyone; its author still sees it, marked rejected."""
    principal = principal_of(request)
    row = knowledge_review_decide(principal=principal, item_id=knowledge_id, approve=False)
    return KnowledgeOut.of(row, principal.user.pk)


def _live_row(principal: Principal, knowledge_id: uuid.UUID) -> KnowledgeItem:
    """A row the caller can read; a project-scoped token reaching for its user's project-less rows may read
    them but not change them (the curation services refuse that with FORBIDDEN_PROJECT)."""
    row = knowledge_live(principal=principal).filter(pk=knowledge_id).first()
    if row is None:
        raise NotFound(f"knowledge {knowledge_id} not found")
    return row


@router.get("/{knowledge_id}", response={200: KnowledgeOut, **ERRORS}, summary="One live knowledge row")
def get_knowledge(request: HttpRequest, knowledge_id: uuid.UUID) -> KnowledgeOut:
    principal = principal_of(request)
    return KnowledgeOut.of(_live_row(principal, knowledge_id), principal.user.pk)


@router.patch("/{knowledge_id}", response={200: KnowledgeOut, **ERRORS, 409: ErrorEnvelope},
              summary="Update a knowledge row")
def update_knowledge(request: HttpRequest, knowledge_id: uuid.UUID, payload: KnowledgeUpdateIn) -> KnowledgeOut:
    """Only the fields you send change; a new rule or trigger is re-embedded. Rows you may change: your own,
    and any row of a project in an org you own (the dashboard's rule)."""
    principal = principal_of(request)
    row = _live_row(principal, knowledge_id)
    sent = payload.model_dump(exclude_unset=True, exclude_none=True)
    row = knowledge_edit(
        principal=principal, item_id=knowledge_id, content=sent.get("rule", row.content),
        trigger=sent.get("trigger", row.trigger), rationale=sent.get("rationale", row.rationale),
        type=sent.get("type", row.type), tags=sent.get("tags", row.tags),
        confidence=sent.get("confidence", row.confidence),
    )
    return KnowledgeOut.of(row, principal.user.pk)


@router.post("/{knowledge_id}/supersede", response={201: TaughtOut, **ERRORS, 409: ErrorEnvelope},
             summary="Replace a knowledge row with a new version")
def supersede_knowledge(request: HttpRequest, knowledge_id: uuid.UUID, payload: SupersedeIn) -> Status[TaughtOut]:
    """Writes the successor (same type, tags and project, confidence 1.0) and retires the old row; a trigger
    or rationale left out is copied from the old row."""
    principal = principal_of(request)
    old = _live_row(principal, knowledge_id)
    new = knowledge_supersede(
        principal=principal, item_id=knowledge_id, content=payload.rule,
        trigger=old.trigger if payload.trigger is None else payload.trigger,
        rationale=old.rationale if payload.rationale is None else payload.rationale,
    )
    # A member's successor waiting for review retires the old row only when approved.
    return Status(201, _taught(Taught(new, None if new.review_supersedes else old.id), principal))


@router.post("/{knowledge_id}/promote", response={200: KnowledgeOut, **ERRORS},
             summary="Promote a row of yours to your scope (every project of yours)")
def promote_knowledge(request: HttpRequest, knowledge_id: uuid.UUID) -> KnowledgeOut:
    """Moves your own row out of its project into your scope; a row already there is returned unchanged."""
    principal = principal_of(request)
    return KnowledgeOut.of(knowledge_promote(principal=principal, item_id=knowledge_id), principal.user.pk)


@router.delete("/{knowledge_id}", response={204: None, **ERRORS}, summary="Delete a knowledge row (soft)")
def delete_knowledge(request: HttpRequest, knowledge_id: uuid.UUID) -> Status[None]:
    """The row leaves retrieval and lists at once (the dashboard can restore it)."""
    principal = principal_of(request)
    _live_row(principal, knowledge_id)  # a retired row is NOT_FOUND here, as in every read
    knowledge_delete(principal=principal, item_id=knowledge_id)
    return Status(204, None)
