"""Members' rules waiting for an owner's review, and who taught a row (for attribution in injections)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db.models import QuerySet

from knowledge.injection import neutralize
from knowledge.models import KnowledgeItem, ReviewStatus
from projects.models import Membership, User
from projects.scope import Principal
from projects.selectors.accounts import projects_visible

AUTHOR_MAX = 80  # characters of an author label in injection text


def review_queue(*, principal: Principal, project_id: uuid.UUID | str | None = None) -> QuerySet[KnowledgeItem]:
    """Pending rows in the projects the caller sees of the orgs the caller owns, oldest first."""
    owned = Membership.objects.filter(user=principal.user, role=Membership.Role.OWNER).values("org_id")
    projects = projects_visible(principal=principal).filter(org__in=owned)
    if project_id is not None:
        projects = projects.filter(id=project_id)
    return (KnowledgeItem.objects.filter(project__in=projects.values("id"), review_status=ReviewStatus.PENDING,
                                         deleted_at__isnull=True, superseded_by__isnull=True)
            .select_related("owner", "project").order_by("created_at", "id"))


def author_label(user: User) -> str:
    """The display name with the e-mail's local part (which the member cannot choose), or the local part alone;
    stored text rules apply (no markers, one line)."""
    local = user.email.split("@", 1)[0]
    name = " ".join(user.display_name.split())
    label = f"{name} ({local})" if name and name.lower() != local.lower() else local
    return neutralize(label)[:AUTHOR_MAX]


def author_labels(*, owner_ids: Iterable[uuid.UUID], viewer: User) -> dict[uuid.UUID, str]:
    """Labels of the authors among `owner_ids` other than `viewer` (the rows are already in the viewer's scope)."""
    others = {oid for oid in owner_ids if oid != viewer.pk}
    if not others:
        return {}
    return {u.pk: author_label(u) for u in User.objects.filter(pk__in=others).only("id", "email", "display_name")}
