"""Resolving action items outside a session (the REST API); a session close resolves them too."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction
from django.utils import timezone

from brain.errors import NotFound
from brain.logs import log_op
from knowledge.models import KnowledgeItem, KnowledgeType, review_usable_by
from projects.scope import Principal
from projects.selectors.accounts import projects_visible

logger = logging.getLogger(__name__)


def action_item_resolve(*, principal: Principal, item_id: uuid.UUID | str) -> KnowledgeItem:
    """Resolves (soft-deletes) an action item of a project the caller can see, as a session outcome's
    resolvedActionItemIds does; resolving twice is harmless."""
    try:
        pk = uuid.UUID(str(item_id))
    except ValueError:
        raise NotFound(f"action item {str(item_id)[:60]} not found") from None
    with transaction.atomic():
        # One held for review is its author's until an owner decides (review_usable_by), as everywhere it is read.
        item = (KnowledgeItem.objects.select_for_update()
                .filter(review_usable_by(principal.user), pk=pk, type=KnowledgeType.ACTION_ITEM,
                        superseded_by__isnull=True,
                        project__in=projects_visible(principal=principal).values("id")).first())
        if item is None:
            raise NotFound(f"action item {item_id} not found")
        if item.deleted_at is None:
            item.deleted_at = timezone.now()
            item.save(update_fields=["deleted_at", "updated_at"])
            log_op(logger, "action_item.resolve", id=str(item.id)[:8])
    return item
