"""Owner review of members' rules in team orgs that ask for it (Org.require_member_review).

A row written by a non-owner member into a project of such an org is stored PENDING: it stays private to its
author (their own lists, retrieval and injections) and reaches nobody else until an owner of the project's org
approves it. A rejected row leaves retrieval for everyone and stays listed for its author only. Owners' own rows
and personal rows never wait."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction
from django.utils import timezone

from brain.errors import ForbiddenProject, NotFound
from brain.logs import log_op
from knowledge.models import KnowledgeItem, ReviewStatus
from projects.models import AuditAction, Membership, Project, User
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from projects.services.audit import audit_record

logger = logging.getLogger(__name__)


def review_status_for(*, author: User, project: Project | None) -> str:
    """PENDING when `author` writes into a project whose org requires review and is not one of its owners."""
    if project is None or not project.org.require_member_review:
        return ReviewStatus.NONE
    is_owner = Membership.objects.filter(org_id=project.org_id, user=author, role=Membership.Role.OWNER).exists()
    return ReviewStatus.NONE if is_owner else ReviewStatus.PENDING


def _pending_row(principal: Principal, item_id: uuid.UUID | str) -> KnowledgeItem:
    """A pending row in a project the caller sees; NOT_FOUND otherwise, FORBIDDEN_PROJECT for non-owners."""
    try:
        pk = uuid.UUID(str(item_id))
    except ValueError:
        raise NotFound(f"knowledge {item_id} not found") from None
    visible = projects_visible(principal=principal).values("id")
    row = (KnowledgeItem.objects.select_for_update(of=("self",)).select_related("project__org")
           .filter(pk=pk, project__in=visible, review_status=ReviewStatus.PENDING, deleted_at__isnull=True).first())
    if row is None or row.project is None:
        raise NotFound(f"knowledge {item_id} not found among rules waiting for review")
    owner = Membership.objects.filter(org_id=row.project.org_id, user=principal.user,
                                      role=Membership.Role.OWNER).exists()
    if not owner:
        raise ForbiddenProject(f"only an owner of {row.project.org.name} may review members' rules")
    return row


def _retire_predecessor(row: KnowledgeItem) -> None:
    # teach's supersedesKnowledgeId waited with the row: the same ownership and project check as at teach time.
    if row.review_supersedes is None or row.project_id is None:
        return
    KnowledgeItem.objects.filter(
        id=row.review_supersedes, owner_id=row.owner_id, project_id=row.project_id, deleted_at__isnull=True,
        superseded_by__isnull=True,
    ).exclude(id=row.id).update(superseded_by=row, updated_at=timezone.now())


def knowledge_review_decide(*, principal: Principal, item_id: uuid.UUID | str, approve: bool) -> KnowledgeItem:
    """Approves (the row goes live for the whole project) or rejects a member's pending row; owners only."""
    with transaction.atomic():
        row = _pending_row(principal, item_id)
        row.review_status = ReviewStatus.APPROVED if approve else ReviewStatus.REJECTED
        row.reviewed_by, row.reviewed_at = principal.user, timezone.now()
        row.save(update_fields=["review_status", "reviewed_by", "reviewed_at", "updated_at"])
        if approve:
            _retire_predecessor(row)
        audit_record(actor=principal.user, project=row.project, target=f"knowledge:{row.id}",
                     action=AuditAction.KNOWLEDGE_APPROVED if approve else AuditAction.KNOWLEDGE_REJECTED,
                     summary=row.content[:200])
    log_op(logger, "knowledge.review", id=str(row.id)[:8], project=str(row.project_id)[:8],
           decision=row.review_status)
    return row
