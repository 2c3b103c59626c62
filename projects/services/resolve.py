"""Which project a session or a taught rule lands in, in the spec's precedence order."""

from __future__ import annotations

import uuid

from projects.scope import Principal
from projects.selectors.accounts import projects_first
from projects.selectors.addressed import ResolvedProject, project_addressed
from projects.services.accounts import project_ensure_default, project_ensure_named


def project_resolve(
    *, principal: Principal, project_id: str | uuid.UUID | None = None, project_name: str | None = None,
    framework: str | None = None, language: str | None = None,
) -> ResolvedProject:
    """Token scope, then projectId, then projectName (found or created in the personal org), then the
    first visible project, then a lazily created "Default". projectName is ignored for scoped tokens."""
    if principal.is_project_scoped or project_id is not None:
        return project_addressed(principal=principal, project_id=project_id)
    if project_name is not None and project_name.strip():
        project, _ = project_ensure_named(
            user=principal.user, name=project_name, framework=framework, language=language
        )
        return ResolvedProject(project, "project_name")
    first = projects_first(principal=principal)
    if first is not None:
        return ResolvedProject(first, "first_project_fallback")
    return ResolvedProject(project_ensure_default(user=principal.user), "default_created")
