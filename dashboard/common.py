"""What every dashboard page needs: the signed-in caller as a principal and the project it asked for."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.http import Http404, HttpRequest

from brain.errors import NotFound
from projects.models import Project, User
from projects.scope import Principal
from projects.selectors.accounts import project_visible, projects_visible


def principal_of(request: HttpRequest) -> Principal:
    assert isinstance(request.user, User)
    return Principal(user=request.user)


def project_of(request: HttpRequest, project_id: uuid.UUID) -> Project:
    """The project in the URL, if the caller may see it; otherwise the same 404 as for a missing one."""
    try:
        return project_visible(principal=principal_of(request), project_id=project_id)
    except NotFound as exc:
        raise Http404(exc.message) from None


def page_context(request: HttpRequest, project: Project, section: str, **extra: Any) -> dict[str, Any]:
    """The switcher's list (one query) and the active section for the sub-navigation."""
    projects = list(projects_visible(principal=principal_of(request)))
    return {"project": project, "projects": projects, "section": section, **extra}


def int_param(request: HttpRequest, name: str, default: int = 1) -> int:
    try:
        return max(int(request.GET.get(name, default)), 1)
    except ValueError:
        return default


def human_duration(value: timedelta | None) -> str:
    """A duration as people read it: 14 s, 5 min, 1 h 20 min; a dash when unknown."""
    if value is None:
        return "\u2013"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"
