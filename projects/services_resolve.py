"""Which project a session or a taught rule lands in, in the spec's precedence order."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from brain.errors import ForbiddenProject, NotFound, ValidationFailed
from projects.models import Project
from projects.scope import Principal
from projects.selectors import project_visible, projects_visible
from projects.services import project_ensure_default, project_ensure_named


@dataclass(frozen=True)
class ResolvedProject:
    project: Project
    # token_scope | project_id | project_name | first_project_fallback | default_created
    source: str


def _uuid(project_id: str | uuid.UUID) -> uuid.UUID:
    try:
        return uuid.UUID(str(project_id))
    except ValueError:
        raise ValidationFailed(f"projectId must be a project UUID; got {str(project_id)[:60]!r}") from None


def _token_project(principal: Principal, project_id: str | uuid.UUID | None) -> ResolvedProject:
    assert principal.token is not None
    if project_id is not None and _uuid(project_id) != principal.token.project_id:
        raise ForbiddenProject("this token is bound to another project; omit projectId or use a user-scoped token")
    project = projects_visible(principal=principal).first()
    if project is None:
        raise ForbiddenProject("this token's project is no longer accessible to its user")
    return ResolvedProject(project, "token_scope")


def project_resolve(
    *, principal: Principal, project_id: str | uuid.UUID | None = None, project_name: str | None = None,
    framework: str | None = None, language: str | None = None,
) -> ResolvedProject:
    """Token scope, then projectId, then projectName (found or created in the personal org), then the
    first visible project, then a lazily created "Default". projectName is ignored for scoped tokens."""
    if principal.is_project_scoped:
        return _token_project(principal, project_id)
    if project_id is not None:
        try:
            return ResolvedProject(project_visible(principal=principal, project_id=_uuid(project_id)), "project_id")
        except NotFound:
            raise ForbiddenProject(f"project {project_id} is not accessible with this token") from None
    if project_name is not None and project_name.strip():
        project, _ = project_ensure_named(
            user=principal.user, name=project_name, framework=framework, language=language
        )
        return ResolvedProject(project, "project_name")
    first = projects_visible(principal=principal).first()
    if first is not None:
        return ResolvedProject(first, "first_project_fallback")
    return ResolvedProject(project_ensure_default(user=principal.user), "default_created")
