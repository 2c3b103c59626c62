"""/api/v1/projects: the same visibility and scope rules as brain_list_projects / brain_create_project."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Query, Router, Status

from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.pagination import PageLimit, paginate
from projects.api.schemas import ProjectCreateIn, ProjectCreateOut, ProjectOut, ProjectPage, TextQuery
from projects.models import Project
from projects.selectors.accounts import project_visible, projects_visible
from projects.services.accounts import project_create_named

router = Router(tags=["projects"])
ERRORS = {400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope}
PROJECT_KEYS = ("own_rank", "created_at", "id")


class ProjectFilters(TextQuery):
    q: str | None = None
    orgId: uuid.UUID | None = None  # noqa: N815
    cursor: str | None = None
    limit: PageLimit = None


def _filtered(qs: QuerySet[Project], filters: ProjectFilters) -> QuerySet[Project]:
    if filters.q:
        qs = qs.filter(name__icontains=filters.q)
    if filters.orgId:
        qs = qs.filter(org_id=filters.orgId)
    return qs


@router.get("", response={200: ProjectPage, **ERRORS}, summary="List visible projects")
def list_projects(request: HttpRequest, filters: Query[ProjectFilters]) -> ProjectPage:
    """Every project of every org you belong to, your personal org first; a project-scoped token sees one."""
    principal = principal_of(request)
    qs = _filtered(projects_visible(principal=principal), filters)
    page = paginate(qs, keys=PROJECT_KEYS, cursor=filters.cursor, limit=filters.limit)
    return ProjectPage(items=[ProjectOut.of(p, principal) for p in page.items], nextCursor=page.next_cursor)


@router.post("", response={200: ProjectCreateOut, 201: ProjectCreateOut, **ERRORS, 409: ErrorEnvelope},
             summary="Create a project (idempotent by name)")
def create_project(request: HttpRequest, payload: ProjectCreateIn) -> Status[ProjectCreateOut]:
    """201 with the new project, or 200 with the existing one of the same name (case-insensitive) in that org."""
    principal = principal_of(request)
    project, created = project_create_named(principal=principal, name=payload.name, framework=payload.framework,
                                            language=payload.language, org_id=payload.orgId)
    project = project_visible(principal=principal, project_id=project.pk)
    out = ProjectCreateOut(**ProjectOut.of(project, principal).model_dump(), created=created)
    return Status(201 if created else 200, out)


@router.get("/{project_id}", response={200: ProjectOut, **ERRORS}, summary="One visible project")
def get_project(request: HttpRequest, project_id: uuid.UUID) -> ProjectOut:
    principal = principal_of(request)
    return ProjectOut.of(project_visible(principal=principal, project_id=project_id), principal)
