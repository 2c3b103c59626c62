"""Dashboard curation of knowledge: edit in place, supersede, soft delete and restore, pin.

Who may change a row: its owner, or an owner of the org of the row's project. Everyone else gets the
same NOT_FOUND as for a row that does not exist. A project-scoped token changes rows of its project only;
its user's project-less rows, which it may read, are FORBIDDEN_PROJECT. Deleting and superseding are
written to the audit log."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from brain.errors import Conflict, NotFound, ValidationFailed
from brain.logs import log_op
from brain.text import text_storable
from knowledge.models import (
    RULE_MAX,
    RULE_MIN,
    TAG_MAX,
    TAGS_MAX,
    Contradiction,
    KnowledgeItem,
    KnowledgeType,
    ReviewStatus,
)
from knowledge.services.create import KnowledgeDraft, embed_or_none, knowledge_create, knowledge_embedding_text
from knowledge.services.knowledge_vectors import KNOWLEDGE_BATCHER, knowledge_vectors_deferred
from knowledge.services.review import review_status_for
from projects.models import AuditAction, Membership, User
from projects.scope import Principal
from projects.services.audit import audit_record

logger = logging.getLogger(__name__)


def _editable(principal: Principal, item_id: uuid.UUID | str) -> KnowledgeItem:
    try:
        pk = uuid.UUID(str(item_id))
    except ValueError:
        raise NotFound(f"knowledge {item_id} not found") from None
    owned_orgs = Membership.objects.filter(user=principal.user, role=Membership.Role.OWNER).values("org_id")
    may = Q(owner=principal.user) | Q(project__org__in=owned_orgs)
    item = KnowledgeItem.objects.select_for_update(of=("self",)).select_related("project").filter(may, pk=pk).first()
    if item is None:
        raise NotFound(f"knowledge {item_id} not found")
    token_project = principal.token.project_id if principal.token else None
    if token_project is not None and item.project_id != token_project:
        # another project, or the user's project-less rows: a project-scoped token sees neither (knowledge_live)
        raise NotFound(f"knowledge {item_id} not found")
    return item


def _clean_tags(tags: Sequence[str]) -> list[str]:
    clean = list(dict.fromkeys(t.strip().lower() for t in tags if t and t.strip()))
    if len(clean) > TAGS_MAX or any(len(t) > TAG_MAX for t in clean):
        raise ValidationFailed(f"tags: at most {TAGS_MAX}, each at most {TAG_MAX} characters")
    return clean


def _check(content: str, type: str, confidence: float) -> None:
    if not RULE_MIN <= len(content.strip()) <= RULE_MAX:
        raise ValidationFailed(f"the rule text must be {RULE_MIN}-{RULE_MAX} characters")
    if type not in KnowledgeType.values:
        raise ValidationFailed(f"type must be one of {', '.join(KnowledgeType.values)}; got {type!r}")
    if not 0.0 <= confidence <= 1.0:
        raise ValidationFailed(f"confidence must be between 0 and 1; got {confidence}")


def _review_again(principal: Principal, item: KnowledgeItem) -> None:
    # An approved rule rewritten by a non-owner member is a new rule for the project: it waits again.
    if review_status_for(author=principal.user, project=item.project) == ReviewStatus.PENDING:
        item.review_status, item.reviewed_by, item.reviewed_at = ReviewStatus.PENDING, None, None


def knowledge_edit(
    *, principal: Principal, item_id: uuid.UUID | str, content: str, trigger: str, rationale: str,
    type: str, tags: Sequence[str], confidence: float,
) -> KnowledgeItem:
    """Fixes a live row in place (a typo, a tag); re-embeds it when its text changed, after the commit in the
    batcher's thread (BRAIN_KNOWLEDGE_VECTORS=inline: before the update), as a taught rule is."""
    text_storable(rule=content, trigger=trigger, rationale=rationale, type=type, tags=list(tags))
    _check(content, type, confidence)
    clean_tags = _clean_tags(tags)
    deferred = knowledge_vectors_deferred()
    vectors, model = (None, "") if deferred else embed_or_none(
        [knowledge_embedding_text(trigger=trigger, content=content)], op="knowledge.embed_failed")
    with transaction.atomic():
        item = _editable(principal, item_id)
        if item.deleted_at or item.superseded_by_id:
            raise Conflict("only a live row can be edited; restore it first, or edit its successor")
        _guard_pattern_kept(item, trigger=trigger, type=type)
        text_changed = (item.content, item.trigger) != (content.strip(), trigger.strip())
        item.content, item.trigger, item.rationale = content.strip(), trigger.strip(), rationale.strip()
        item.type, item.tags, item.confidence = type, clean_tags, confidence
        if text_changed:
            item.embedding, item.embedding_model = (vectors[0], model) if vectors else (None, "")
            _review_again(principal, item)
        item.save()
        if text_changed and deferred:
            KNOWLEDGE_BATCHER.submit_after_commit([item.pk])
    log_op(logger, "knowledge.edit", id=str(item.id)[:8], reembedded=text_changed)
    return item


def _guard_pattern_kept(item: KnowledgeItem, *, trigger: str, type: str) -> None:
    """A guard rule's trigger is the pattern its guard pattern row matches, and its type ties it to that row: an edit
    of either would leave the guard enforcing one pattern while search finds the rule by another."""
    if KnowledgeType.GUARD in (item.type, type) and (item.type != type or item.trigger != trigger.strip()):
        raise ValidationFailed("a guard rule's pattern and type cannot be edited; remove the rule and add it again "
                               "with the new pattern (its text and confidence can be edited)")


def knowledge_supersede(
    *, principal: Principal, item_id: uuid.UUID | str, content: str, trigger: str = "", rationale: str = "",
) -> KnowledgeItem:
    """Writes a successor (same type, tags and project, confidence 1.0) and retires the row behind it."""
    text_storable(rule=content, trigger=trigger, rationale=rationale)
    with transaction.atomic():
        old = _editable(principal, item_id)
        if old.deleted_at or old.superseded_by_id:
            raise Conflict("this row is already retired; supersede its successor instead")
        _check(content, old.type, 1.0)
        draft = KnowledgeDraft(content=content, type=old.type, trigger=trigger, rationale=rationale,
                               tags=tuple(old.tags), source="edited", confidence=1.0,
                               framework=old.framework, language=old.language)
        new = knowledge_create(owner=principal.user, project=old.project, draft=draft)
        if new.review_status == ReviewStatus.PENDING:  # the old row stays live for others until an owner approves
            new.review_supersedes = old.id
            new.save(update_fields=["review_supersedes", "updated_at"])
            return new
        old.superseded_by = new
        old.save(update_fields=["superseded_by", "updated_at"])
        audit_record(actor=principal.user, action=AuditAction.KNOWLEDGE_SUPERSEDED, project=old.project,
                     target=f"knowledge:{old.id}", summary=f"by {new.id}: {content.strip()[:200]}")
    return new


def knowledge_delete(*, principal: Principal, item_id: uuid.UUID | str, actor: User | None = None) -> KnowledgeItem:
    """Soft delete: the row leaves retrieval at once and can be restored. `actor` is who the audit log
    names when it differs from the principal (staff acting in admin on the owner's behalf)."""
    with transaction.atomic():
        item = _editable(principal, item_id)
        if item.deleted_at is None:
            item.deleted_at = timezone.now()
            item.save(update_fields=["deleted_at", "updated_at"])
            audit_record(actor=actor or principal.user, action=AuditAction.KNOWLEDGE_DELETED, project=item.project,
                         target=f"knowledge:{item.id}", summary=item.content[:200])
    return item


def knowledge_restore(*, principal: Principal, item_id: uuid.UUID | str, actor: User | None = None) -> KnowledgeItem:
    """Undoes a soft delete."""
    with transaction.atomic():
        item = _editable(principal, item_id)
        if item.deleted_at is not None:
            item.deleted_at = None
            item.save(update_fields=["deleted_at", "updated_at"])
            audit_record(actor=actor or principal.user, action=AuditAction.KNOWLEDGE_RESTORED, project=item.project,
                         target=f"knowledge:{item.id}", summary=item.content[:200])
    return item


def knowledge_pin(*, principal: Principal, item_id: uuid.UUID | str, pinned: bool = True) -> KnowledgeItem:
    """Pins a row (decay never lowers it again; it comes back to full strength now) or unpins it (the next
    decay run scores it from its last use like any other)."""
    with transaction.atomic():
        item = _editable(principal, item_id)
        if item.deleted_at is not None or item.superseded_by_id is not None:
            raise ValidationFailed("only a live row can be pinned; restore it (or pin its replacement) first")
        if item.pinned != pinned:
            item.pinned = pinned
            item.decay_score = 1.0 if pinned else item.decay_score
            item.save(update_fields=["pinned", "decay_score", "updated_at"])
    log_op(logger, "knowledge.pinned" if pinned else "knowledge.unpinned", knowledgeId=str(item.id)[:8])
    return item


def contradiction_resolve(*, principal: Principal, contradiction_id: uuid.UUID | str) -> Contradiction:
    """Marks a contradiction handled (after superseding or deleting a side, or judging it a false alarm).
    Only the owner of the pair may; others get NOT_FOUND."""
    with transaction.atomic():
        pair = Contradiction.objects.select_for_update().filter(pk=contradiction_id, owner=principal.user).first()
        if pair is None:
            raise NotFound(f"contradiction {contradiction_id} not found")
        if pair.resolved_at is None:
            pair.resolved_at = timezone.now()
            pair.save(update_fields=["resolved_at", "updated_at"])
    return pair
