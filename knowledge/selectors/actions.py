"""Action items assigned to the caller (tag `for:<their email>`), in the projects the token can see."""

from __future__ import annotations

import uuid
from typing import Literal

from django.db.models import Case, IntegerField, QuerySet, Value, When

from knowledge.models import KnowledgeItem, KnowledgeType, review_clear
from projects.scope import Principal
from projects.selectors.accounts import project_visible, projects_visible

ActionStatus = Literal["open", "resolved"]
# Open items come blockers first, then oldest (the order a session open injects them in);
# resolved ones come most recently resolved first.
ORDER: dict[str, tuple[str, ...]] = {
    "open": ("blocker_rank", "created_at", "id"),
    "resolved": ("-deleted_at", "-id"),
}


def action_items_for(
    *, principal: Principal, status: ActionStatus = "open", project_id: uuid.UUID | str | None = None
) -> QuerySet[KnowledgeItem]:
    """The caller's open (or resolved) action items, annotated with `blocker_rank`, in ORDER[status]."""
    projects = projects_visible(principal=principal).values("id")
    if project_id is not None:
        projects = projects.filter(id=project_visible(principal=principal, project_id=project_id).id)
    blocker_first = Case(When(tags__contains=["blocker"], then=Value(0)), default=Value(1),
                         output_field=IntegerField())
    qs = KnowledgeItem.objects.filter(
        review_clear(), project__in=projects, type=KnowledgeType.ACTION_ITEM, superseded_by__isnull=True,
        tags__contains=[f"for:{principal.user.email.strip().lower()}"], deleted_at__isnull=status == "open",
    ).annotate(blocker_rank=blocker_first)
    return qs.order_by(*ORDER[status])
