"""Promotion: a project's row moves to its owner's scope (project null), where every session of theirs sees it.

Learned rows start in their session's project. They move up by themselves once they have proved
themselves in two projects (`knowledge.services.absorb`), or when their owner promotes them here
(dashboard, REST) or teaches a rule with `scope: "user"`.
"""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from brain.errors import ForbiddenProject, NotFound
from brain.logs import log_op
from knowledge.models import KnowledgeItem
from projects.models import AuditAction
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from projects.services.audit import audit_record

logger = logging.getLogger(__name__)
SCOPES = ("project", "user")


def scope_check(*, principal: Principal, scope: str) -> None:
    """A token bound to one project may not write beyond it: the owner's scope reaches every project."""
    if scope == "user" and principal.is_project_scoped:
        raise ForbiddenProject("this token is bound to one project; promote to your scope with an unbound token "
                               "or from the dashboard")


def knowledge_promote(*, principal: Principal, item_id: uuid.UUID | str) -> KnowledgeItem:
    """Moves the caller's own live row from a visible project to the caller's scope; a row already there stays."""
    scope_check(principal=principal, scope="user")
    with transaction.atomic():
        row = KnowledgeItem.objects.select_for_update().filter(
            pk=item_id, owner=principal.user, deleted_at__isnull=True, superseded_by__isnull=True,
        ).first()
        if row is None or (row.project_id is not None and not projects_visible(principal=principal).filter(
                id=row.project_id).exists()):
            raise NotFound(f"knowledge {item_id} not found among your rows")
        if row.project_id is None:
            return row
        project = row.project
        KnowledgeItem.objects.filter(pk=row.pk).update(project=None)
        audit_record(actor=principal.user, action=AuditAction.KNOWLEDGE_PROMOTED, project=project,
                     target=f"knowledge:{row.pk}", summary=row.content[:200])
    log_op(logger, "knowledge.promoted", knowledgeId=str(row.pk)[:8], fromProject=str(row.project_id)[:8],
           reason="explicit")
    row.project = None
    return row
