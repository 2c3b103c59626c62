"""Proposals (autoskill's, and the dream cycle's merges and fades): recorded idempotently, applied on approval,
closed with a reason on rejection."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from brain.errors import Conflict, NotFound, ValidationFailed
from brain.text import text_storable
from knowledge.models import (
    DECISION_REASON_MAX,
    PROPOSAL_TARGET_KEY_MAX,
    KnowledgeItem,
    KnowledgeType,
    Proposal,
    ProposalKind,
    ProposalStatus,
    SkillStage,
)
from knowledge.services.dream_proposals import dream_proposal_apply
from knowledge.services.knowledge_vectors import knowledge_vectors_follow
from knowledge.services.review import review_status_for
from knowledge.services.skills import SKILL_TYPES
from projects.models import AuditAction, Project, User
from projects.services.audit import audit_record

APPROVED_CONFIDENCE = 0.8  # a human vouched for it, but it has no outcomes yet
_DREAM_KINDS = (ProposalKind.MERGE, ProposalKind.FADE)


@dataclass(frozen=True)
class ProposalDraft:
    target_key: str
    kind: str
    content: str
    score: int
    type: str = KnowledgeType.REFLEX
    trigger: str = ""
    rationale: str = ""
    target_id: uuid.UUID | None = None
    signals: Sequence[dict[str, object]] = field(default_factory=tuple)


def proposal_record_many(
    *, owner: User, project: Project | None, session_id: uuid.UUID, drafts: Sequence[ProposalDraft]
) -> int:
    """Stores the drafts not yet proposed for this (session, target); returns how many are new."""
    rows = [
        Proposal(owner=owner, project=project, session_id=session_id, kind=d.kind,
                 target_key=d.target_key[:PROPOSAL_TARGET_KEY_MAX], target_id=d.target_id, type=d.type,
                 trigger=d.trigger, content=d.content, rationale=d.rationale, score=d.score, signals=list(d.signals))
        for d in drafts
    ]
    with transaction.atomic():
        before = Proposal.objects.filter(session_id=session_id).count()
        Proposal.objects.bulk_create(rows, ignore_conflicts=True)
        return Proposal.objects.filter(session_id=session_id).count() - before


def _pending_for(user: User, proposal_id: uuid.UUID | str) -> Proposal:
    # The user's proposal in a project still visible to them (personal, or of an org they are still a member of):
    # after leaving an org, its proposals would otherwise still write into its project.
    visible = Q(project__isnull=True) | Q(project__org__memberships__user=user)
    proposal = Proposal.objects.select_for_update(of=("self",)).filter(visible, id=proposal_id, owner=user).first()
    if proposal is None:
        raise NotFound(f"proposal {proposal_id} not found")
    if proposal.status != ProposalStatus.PENDING:
        raise Conflict(f"proposal {proposal_id} was already {proposal.status}")
    return proposal


def _apply(proposal: Proposal) -> tuple[KnowledgeItem, bool]:
    """The row the approval wrote or changed, and whether its text is new (its vector must follow)."""
    if proposal.kind in _DREAM_KINDS:
        return dream_proposal_apply(proposal), False  # a merge or fade changes no row's text
    if proposal.kind == ProposalKind.SKILL_PATCH and proposal.target_id:
        skill = KnowledgeItem.objects.select_for_update().filter(
            Q(project__isnull=True) | Q(project_id=proposal.project_id), id=proposal.target_id,
            owner=proposal.owner_id).first()
        if skill is None:  # gone, or in another project than the session the proposal came from
            raise NotFound(f"the skill proposal {proposal.id} extends is not in its project")
        # Append-only: the skill keeps every line it had; the approved rule is added at the end, once (two
        # sessions may propose the same line). Its vector is of the text it had until the new one comes.
        line = f"- {proposal.content.strip()}"
        if line in skill.content.splitlines():
            return skill, False
        skill.content = f"{skill.content.rstrip()}\n{line}"
        if skill.stage in (SkillStage.INBOX, SkillStage.NOTES):  # a human approved work on it: offer it
            skill.stage = SkillStage.KNOWLEDGE
        skill.embedding, skill.embedding_model = None, ""
        skill.save(update_fields=["content", "stage", "embedding", "embedding_model", "updated_at"])
        return skill, True
    return KnowledgeItem.objects.create(
        owner_id=proposal.owner_id, project_id=proposal.project_id, type=proposal.type, trigger=proposal.trigger,
        content=proposal.content, rationale=proposal.rationale, tags=["autoskill"], source="autoskill",
        # Approved in the review queue: a recipe or skill is offered right away (knowledge/services/skills.py).
        stage=SkillStage.KNOWLEDGE if proposal.type in SKILL_TYPES else SkillStage.NONE,
        confidence=APPROVED_CONFIDENCE, review_status=review_status_for(author=proposal.owner,
                                                                         project=proposal.project),
    ), True


def proposal_approve(*, user: User, proposal_id: uuid.UUID | str) -> Proposal:
    """Applies a pending proposal of the user (new row, or text appended to the skill) and marks it approved.
    The row commits with its full-text; its vector follows, as a taught rule's does (`knowledge_vectors_follow`)."""
    with transaction.atomic():
        proposal = _pending_for(user, proposal_id)
        item, text_changed = _apply(proposal)
        proposal.applied_item = item
        proposal.status, proposal.decided_at = ProposalStatus.APPROVED, timezone.now()
        proposal.save(update_fields=["applied_item", "status", "decided_at", "updated_at"])
        audit_record(actor=user, action=AuditAction.PROPOSAL_APPROVED, project=proposal.project,
                     target=f"proposal:{proposal.id}", summary=proposal.content[:200])
        if text_changed:
            knowledge_vectors_follow([item.pk])
    return proposal


def proposal_reject(*, user: User, proposal_id: uuid.UUID | str, reason: str) -> Proposal:
    """Closes a pending proposal of the user without applying it, keeping why."""
    text_storable(reason=reason)
    if not reason.strip():
        raise ValidationFailed("reason must say why the proposal is rejected (it teaches the next run)")
    with transaction.atomic():
        proposal = _pending_for(user, proposal_id)
        proposal.status, proposal.decided_at = ProposalStatus.REJECTED, timezone.now()
        proposal.decision_reason = reason.strip()[:DECISION_REASON_MAX]
        proposal.save(update_fields=["status", "decided_at", "decision_reason", "updated_at"])
    return proposal
