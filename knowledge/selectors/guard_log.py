"""The stored guard decisions of one project, newest first, for the dashboard."""

from __future__ import annotations

from brain.paging import page_slice
from knowledge.guard_models import GuardDecision
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import project_visible

PAGE = 50


def guard_decisions_list(*, principal: Principal, project: Project, page: int = 1,
                         only: str = "") -> tuple[list[GuardDecision], bool]:
    """One page of the project's decisions (`only`: blocked, warned or allowed); and whether more follow."""
    visible = project_visible(principal=principal, project_id=project.id)  # re-checked in SQL scope
    rows = GuardDecision.objects.filter(project=visible).select_related("owner")
    if only == "blocked":
        rows = rows.filter(allowed=False)
    elif only == "warned":
        rows = rows.filter(allowed=True).exclude(warnings=[])
    elif only == "allowed":
        rows = rows.filter(allowed=True, warnings=[])
    # The id breaks ties between decisions of one instant, so a page boundary neither skips nor repeats one.
    return page_slice(rows.order_by("-created_at", "-id"), page, PAGE)
