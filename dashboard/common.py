"""What every dashboard page needs: the signed-in caller as a principal and the project it asked for."""

from __future__ import annotations

import uuid
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


def text_param(request: HttpRequest, name: str, max_length: int = 254) -> str:
    """A free-text filter from the query string, without the NUL characters PostgreSQL refuses in any text."""
    return request.GET.get(name, "").replace("\x00", "")[:max_length]


