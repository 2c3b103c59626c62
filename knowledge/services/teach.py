"""Teaching: a rule the user states outright, stored at full confidence, optionally retiring its predecessor."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from brain.errors import ValidationFailed
from brain.logs import log_op
from brain.sql_rows import xact_lock
from brain.text import text_storable
from knowledge.models import (
    RATIONALE_MAX,
    RULE_MAX,
    RULE_MIN,
    TAG_MAX,
    TAGS_MAX,
    TRIGGER_MAX,
    KnowledgeItem,
    KnowledgeType,
    ReviewStatus,
)
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.promote import SCOPES, scope_check
from projects.models import STACK_NAME_MAX, AuditAction, Project
from projects.scope import Principal
from projects.services.audit import audit_record
from projects.services.resolve import project_resolve

logger = logging.getLogger(__name__)
TEACHABLE = ("reflex", "recipe", "heuristic", "principle", "anti_principle", "action_item")
_MEETING = re.compile(r"^meeting:\d{4}-\d{2}-\d{2}-[a-z0-9][a-z0-9-]*$")
_EMAIL = re.compile(r"^for:[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class Taught:
    item: KnowledgeItem
    superseded_id: uuid.UUID | None
    repeated: bool = False  # the same rule was already live in that scope: it was reaffirmed, not duplicated


def _tags(tags: Sequence[str], kind: str) -> list[str]:
    clean = list(dict.fromkeys(t.strip().lower() for t in tags if t and t.strip()))
    if len(clean) > TAGS_MAX or any(len(t) > TAG_MAX for t in clean):
        raise ValidationFailed(f"tags: at most {TAGS_MAX}, each at most {TAG_MAX} characters")
    if kind != KnowledgeType.ACTION_ITEM:
        return clean
    if not {"action-item", "open-question"} & set(clean):
        raise ValidationFailed("an action_item needs the tag 'action-item' or 'open-question'")
    if not any(_EMAIL.match(t) for t in clean):
        raise ValidationFailed("an action_item needs an assignee tag 'for:<email>'")
    bad = [t for t in clean if t.startswith("meeting:") and not _MEETING.match(t)]
    if bad:
        raise ValidationFailed(f"meeting tags look like 'meeting:YYYY-MM-DD-slug'; got {bad[0]!r}")
    return clean


def _supersede(*, principal: Principal, new: KnowledgeItem, old_id: str | None) -> uuid.UUID | None:
    """Retires the predecessor only when the caller owns it and it sits in the same project; else ignored."""
    try:
        pk = uuid.UUID(str(old_id)) if old_id else None
    except ValueError:
        return None
    if pk is None or pk == new.id:
        return None
    done = KnowledgeItem.objects.filter(
        id=pk, owner=principal.user, project=new.project, deleted_at__isnull=True, superseded_by__isnull=True,
    ).update(superseded_by=new)
    return pk if done else None


def _same_rule(*, principal: Principal, project: Project | None, draft: KnowledgeDraft) -> KnowledgeItem | None:
    """The caller's live row of the same type and the same words (case and spacing aside) in that scope."""
    words = " ".join(draft.content.split())
    # The same rule taught twice at once takes turns (both found no row and both stored one), and the row found is
    # locked: a delete committed meanwhile is seen, so a rule is never reaffirmed into a deleted row.
    key = f"teach:{principal.user.pk}:{project.pk if project else ''}:{draft.type}:{words.lower()}"
    xact_lock(key)
    rows = KnowledgeItem.objects.select_for_update().filter(
        owner=principal.user, project=project, type=draft.type, deleted_at__isnull=True, superseded_by__isnull=True,
    ).exclude(review_status=ReviewStatus.REJECTED)  # taught again after a rejection: a new row for a new review
    return next((row for row in rows.filter(content__iexact=draft.content.strip())
                 if " ".join(row.content.split()).lower() == words.lower()), None)


def _reaffirm(row: KnowledgeItem, draft: KnowledgeDraft) -> KnowledgeItem:
    # Teaching a rule again is a vote for it, not a second copy: full confidence, the new tags added.
    row.confidence = 1.0
    row.tags = list(dict.fromkeys([*row.tags, *draft.tags]))[:TAGS_MAX]
    row.save(update_fields=["confidence", "tags", "updated_at"])
    return row


def _held(item: KnowledgeItem, old_id: str | None) -> Taught:
    """A member's row waiting for review: its predecessor is retired on approval, not now (no gap for others)."""
    try:
        item.review_supersedes = uuid.UUID(str(old_id)) if old_id else None
    except ValueError:
        item.review_supersedes = None
    if item.review_supersedes is not None:
        item.save(update_fields=["review_supersedes", "updated_at"])
    log_op(logger, "knowledge.teach", type=item.type, project=str(item.project_id)[:8], review="pending")
    return Taught(item, None)


def knowledge_teach(
    *, principal: Principal, rule: str, type: str = "heuristic", trigger: str = "", rationale: str = "",
    tags: Sequence[str] = (), project_id: str | None = None, framework: str = "", language: str = "",
    supersedes_knowledge_id: str | None = None, scope: str = "project",
) -> Taught:
    """Stores the rule at confidence 1.0 in the resolved project (the caller's token scope applies), or in the
    caller's own scope with `scope="user"`; the same rule taught again in the same scope is reaffirmed, not copied.
    A non-owner member teaching into a project of an org that requires review gets a pending row (review.py)."""
    text_storable(rule=rule, type=type, trigger=trigger, rationale=rationale, tags=list(tags), projectId=project_id,
                  framework=framework, language=language, supersedesKnowledgeId=supersedes_knowledge_id, scope=scope)
    if scope not in SCOPES:
        raise ValidationFailed(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")
    scope_check(principal=principal, scope=scope)
    if scope == "user" and type == KnowledgeType.ACTION_ITEM:
        raise ValidationFailed("an action_item belongs to a project; teach it without scope 'user'")
    if type not in TEACHABLE:
        raise ValidationFailed(f"type must be one of {', '.join(TEACHABLE)}; got {type!r}")
    if len(rule.strip()) < RULE_MIN or len(rule) > RULE_MAX:
        raise ValidationFailed(f"rule must be {RULE_MIN}-{RULE_MAX} characters")
    if len(trigger) > TRIGGER_MAX or len(rationale) > RATIONALE_MAX:
        raise ValidationFailed(f"trigger is limited to {TRIGGER_MAX} characters and rationale to {RATIONALE_MAX}")
    draft = KnowledgeDraft(
        content=rule, type=type, trigger=trigger, rationale=rationale, tags=_tags(tags, type), source="taught",
        confidence=1.0, framework=framework[:STACK_NAME_MAX], language=language[:STACK_NAME_MAX],
    )
    project = project_resolve(principal=principal, project_id=project_id).project
    home = project if scope == "project" else None
    with transaction.atomic():
        same = _same_rule(principal=principal, project=home, draft=draft) if not supersedes_knowledge_id else None
        if same is not None:
            log_op(logger, "knowledge.teach", type=type, project=str(project.id)[:8], repeated=True, scope=scope)
            return Taught(_reaffirm(same, draft), None, repeated=True)
        item = knowledge_create(owner=principal.user, project=home, draft=draft)
        if item.review_status == ReviewStatus.PENDING:
            return _held(item, supersedes_knowledge_id)
        superseded = _supersede(principal=principal, new=item, old_id=supersedes_knowledge_id)
        if superseded:
            # Filed where the rows are: a personal rule's text stays out of the org whose project resolved the call.
            audit_record(actor=principal.user, action=AuditAction.KNOWLEDGE_SUPERSEDED, project=home,
                         target=f"knowledge:{superseded}", summary=f"by {item.id}: {rule.strip()[:200]}")
    log_op(logger, "knowledge.teach", type=type, project=str(project.id)[:8], superseded=bool(superseded),
           scope=scope)
    return Taught(item, superseded)
