"""The project a call addresses explicitly: the token's own project, or a visible `projectId`; and the
account a call acts on as a whole, which a project-scoped token may not. Reads: they never create anything
(creating by name or a default is `projects.services.resolve`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from brain.errors import ForbiddenProject, NotFound, ValidationFailed
from projects.models import Project, User
from projects.scope import Principal
from projects.selectors.accounts import project_visible, projects_first


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
    project = projects_first(principal=principal)
    if project is None:
        raise ForbiddenProject("this token's project is no longer accessible to its user")
    return ResolvedProject(project, "token_scope")


def project_addressed(*, principal: Principal, project_id: str | uuid.UUID | None) -> ResolvedProject:
    """A project-scoped token always means its own project (another `projectId` is refused); otherwise the
    visible project `project_id` names (a hidden one is refused like a missing one)."""
    if principal.is_project_scoped:
        return _token_project(principal, project_id)
    if project_id is None:
        raise ValidationFailed("projectId is required with a user-scoped token")
    try:
        return ResolvedProject(project_visible(principal=principal, project_id=_uuid(project_id)), "project_id")
    except NotFound:
        raise ForbiddenProject(f"project {project_id} is not accessible with this token") from None


def account_user(*, principal: Principal, action: str) -> User:
    """The user whose whole account the call acts on (its tokens, peer card, export, new projects). A
    project-scoped token is refused with FORBIDDEN_PROJECT: it must never reach past its one project, nor
    mint itself a wider token. `action` completes "a project-scoped token cannot ..."."""
    if principal.is_project_scoped:
        raise ForbiddenProject(f"a project-scoped token cannot {action}; use a user-scoped token")
    return principal.user
