"""Dashboard reads of knowledge: lists, detail, review queues and overview counts, scoped in SQL.

A project's page shows the project's rows plus the caller's own project-less rows (the same rows a
session in that project could be injected with). Every function takes the already-visible project."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from brain.errors import NotFound
from brain.paging import page_slice
from knowledge.models import (
    Contradiction,
    HealthSnapshot,
    KnowledgeItem,
    KnowledgeType,
    PeerCard,
    Proposal,
    ProposalStatus,
    review_clear,
    review_usable_by,
)
from projects.models import Project, User
from projects.scope import Principal

PAGE = 50
CHAIN_MAX = 20  # supersession chains are short; a cap keeps a corrupted cycle from looping


@dataclass(frozen=True)
class KnowledgeFilters:
    type: str = ""
    tag: str = ""
    min_confidence: float | None = None
    decay: str = ""  # "" | live | fading | decayed
    source: str = ""
    state: str = "live"  # live | superseded | deleted | all


def _in_project(principal: Principal, project: Project) -> Q:
    # A row held for review shows only to its author here (owners decide it on the review page).
    return (Q(project=project) | Q(project__isnull=True, owner=principal.user)) & (
        review_clear() | Q(owner=principal.user))


def knowledge_in_project(*, principal: Principal, project: Project) -> QuerySet[KnowledgeItem]:
    return KnowledgeItem.objects.filter(_in_project(principal, project))


def _state(qs: QuerySet[KnowledgeItem], state: str) -> QuerySet[KnowledgeItem]:
    if state == "deleted":
        return qs.filter(deleted_at__isnull=False)
    if state == "superseded":
        return qs.filter(deleted_at__isnull=True, superseded_by__isnull=False)
    if state == "all":
        return qs
    return qs.filter(deleted_at__isnull=True, superseded_by__isnull=True)


def _decay(qs: QuerySet[KnowledgeItem], decay: str, floor: float) -> QuerySet[KnowledgeItem]:
    if decay == "live":
        return qs.filter(decay_score__gte=0.5)
    if decay == "fading":
        return qs.filter(decay_score__lt=0.5, decay_score__gt=floor)
    if decay == "decayed":
        return qs.filter(decay_score__lte=floor)
    return qs


def knowledge_list(
    *, principal: Principal, project: Project, filters: KnowledgeFilters, floor: float = 0.1, page: int = 1,
) -> tuple[list[KnowledgeItem], bool]:
    """One page of rows matching the filters, newest first, and whether another page follows."""
    qs = _decay(_state(knowledge_in_project(principal=principal, project=project), filters.state),
                filters.decay, floor)
    if filters.type:
        qs = qs.filter(type=filters.type)
    if filters.tag:
        qs = qs.filter(tags__contains=[filters.tag.strip().lower()])
    if filters.min_confidence is not None:
        qs = qs.filter(confidence__gte=filters.min_confidence)
    if filters.source:
        qs = qs.filter(source=filters.source)
    return page_slice(qs.defer("embedding", "search_vector").order_by("-created_at", "-id"), page, PAGE)


def knowledge_sources(*, principal: Principal, project: Project) -> list[str]:
    qs = knowledge_in_project(principal=principal, project=project).exclude(source="")
    # order_by() drops the model ordering, which would otherwise join the DISTINCT
    return sorted(qs.order_by().values_list("source", flat=True).distinct()[:50])


def knowledge_one(*, principal: Principal, project: Project, item_id: uuid.UUID | str) -> KnowledgeItem:
    """One row on the project's pages (deleted and superseded included); a hidden one is NOT_FOUND."""
    try:
        pk = uuid.UUID(str(item_id))
    except ValueError:
        raise NotFound(f"knowledge {item_id} not found") from None
    item = knowledge_in_project(principal=principal, project=project).defer("embedding").filter(pk=pk).first()
    if item is None:
        raise NotFound(f"knowledge {item_id} not found")
    return item


@dataclass
class Chain:
    older: list[KnowledgeItem] = field(default_factory=list)  # what this row replaced, newest first
    newer: list[KnowledgeItem] = field(default_factory=list)  # what replaced it, in order


def supersession_chain(*, principal: Principal, project: Project, item: KnowledgeItem) -> Chain:
    """Walks both ways, within the same scope; at most CHAIN_MAX queries each way."""
    scope = knowledge_in_project(principal=principal, project=project).only(
        "id", "type", "content", "superseded_by_id", "deleted_at", "created_at")
    chain = Chain()
    cursor, seen = item, {item.id}
    while cursor.superseded_by_id and len(chain.newer) < CHAIN_MAX:
        nxt = scope.filter(pk=cursor.superseded_by_id).first()
        if nxt is None or nxt.id in seen:
            break
        chain.newer.append(nxt)
        seen.add(nxt.id)
        cursor = nxt
    cursor = item
    while len(chain.older) < CHAIN_MAX:
        prev = scope.filter(superseded_by_id=cursor.id).order_by("-created_at").first()
        if prev is None or prev.id in seen:
            break
        chain.older.append(prev)
        seen.add(prev.id)
        cursor = prev
    return chain


def source_session_ids(*, item: KnowledgeItem) -> list[uuid.UUID]:
    """Sessions an item came from: its `session:<id>` tags and the proposals that produced it."""
    ids: list[uuid.UUID] = []
    for tag in item.tags:
        if tag.startswith("session:"):
            try:
                ids.append(uuid.UUID(tag.split(":", 1)[1]))
            except ValueError:
                continue
    ids += Proposal.objects.filter(applied_item=item, owner=item.owner_id).values_list("session_id", flat=True)
    return list(dict.fromkeys(ids))


def proposals_for(*, principal: Principal, project: Project, status: str = ProposalStatus.PENDING) -> list[Proposal]:
    """The caller's proposals in the project (and project-less ones), best first, targets joined."""
    qs = Proposal.objects.filter(Q(project=project) | Q(project__isnull=True), owner=principal.user, status=status)
    return list(qs.select_related("target").defer("target__embedding").order_by("-score", "-created_at")[:PAGE])


def contradictions_open(*, principal: Principal, project: Project) -> list[Contradiction]:
    qs = Contradiction.objects.filter(Q(project=project) | Q(project__isnull=True, owner=principal.user),
                                      resolved_at__isnull=True)
    return list(qs.select_related("first", "second", "owner").defer("first__embedding", "second__embedding")
                .order_by("-similarity")[:PAGE])


def action_items(
    *, principal: Principal, project: Project, state: str = "open", assignee_email: str = "",
) -> list[KnowledgeItem]:
    """The project's action items (open, or resolved = retired by a session), blockers first, then by
    assignee, oldest first; resolved ones most recently resolved first."""
    # A member's item held for review is its author's until approved (the others' links to it answered 404).
    qs = KnowledgeItem.objects.filter(review_usable_by(principal.user), project=project, type=KnowledgeType.ACTION_ITEM)
    qs = qs.filter(deleted_at__isnull=True) if state == "open" else qs.filter(deleted_at__isnull=False)
    if assignee_email:
        qs = qs.filter(tags__contains=[f"for:{assignee_email.strip().lower()}"])
    # The page's rows picked in the order shown: the most recently resolved, not the oldest created, when resolved.
    ordered = qs.order_by("created_at") if state == "open" else qs.order_by("-deleted_at", "-created_at")
    rows = list(ordered.defer("embedding", "search_vector")[:PAGE * 4])
    if state == "open":
        rows.sort(key=lambda r: ("blocker" not in r.tags, assignee(r)))
    else:
        rows.sort(key=lambda r: r.deleted_at or r.created_at, reverse=True)
    return rows


def assignee(item: KnowledgeItem) -> str:
    return next((t[4:] for t in item.tags if t.startswith("for:")), "")


def knowledge_growth(*, principal: Principal, project: Project, days: int) -> list[tuple[date, int]]:
    """Rows created per day over the last `days` days (one GROUP BY)."""
    since = timezone.now() - timedelta(days=days)
    qs = knowledge_in_project(principal=principal, project=project).filter(created_at__gte=since)
    rows = qs.annotate(day=TruncDate("created_at")).values("day").annotate(n=Count("id")).order_by("day")
    return [(r["day"], r["n"]) for r in rows]


def knowledge_counts(*, principal: Principal, project: Project) -> dict[str, int]:
    """Live, superseded and deleted rows, and pending proposals, in two queries."""
    qs = knowledge_in_project(principal=principal, project=project)
    return qs.aggregate(
        live=Count("id", filter=Q(deleted_at__isnull=True, superseded_by__isnull=True)),
        superseded=Count("id", filter=Q(superseded_by__isnull=False)),
        deleted=Count("id", filter=Q(deleted_at__isnull=False)),
    ) | {"pending": Proposal.objects.filter(Q(project=project) | Q(project__isnull=True), owner=principal.user,
                                            status=ProposalStatus.PENDING).count()}


def health_latest(*, principal: Principal, project: Project) -> HealthSnapshot | None:
    return HealthSnapshot.objects.filter(project=project).order_by("-as_of").first()


def health_series(*, principal: Principal, project: Project, days: int) -> list[HealthSnapshot]:
    since = (timezone.now() - timedelta(days=days)).date()
    return list(HealthSnapshot.objects.filter(project=project, as_of__gte=since).order_by("as_of"))


def peer_card_facts(*, principal: Principal) -> dict[str, str]:
    card = PeerCard.objects.filter(user=principal.user).first()
    return dict(card.facts) if card else {}


def proposals_pending(*, user: User) -> QuerySet[Proposal]:
    """The user's proposals waiting for a decision, best first."""
    return Proposal.objects.filter(owner=user, status=ProposalStatus.PENDING).order_by("-score", "-created_at")
