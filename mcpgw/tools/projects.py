"""brain_create_project, brain_list_projects, brain_get_active_project."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from mcpgw.registry import NoArguments, ToolModel, tool
from projects.models import PROJECT_NAME_MAX, STACK_NAME_MAX, Project
from projects.scope import Principal
from projects.selectors.accounts import project_active, projects_listed
from projects.services.accounts import project_create_named


class CreateProjectIn(ToolModel):
    name: str = Field(min_length=1, max_length=PROJECT_NAME_MAX,
                      description="Project name; matched case-insensitively.")
    framework: str | None = Field(default=None, max_length=STACK_NAME_MAX, description="e.g. react, django; kept only "
                                  "when the project is created.", examples=["react", "nextjs", "django"])
    language: str | None = Field(default=None, max_length=STACK_NAME_MAX, description="e.g. typescript, python; kept "
                                 "only when the project is created.", examples=["typescript", "python"])


class CreateProjectOut(ToolModel):
    project_id: uuid.UUID
    slug: str
    created: bool = Field(description="false when a project of that name already existed")


class ProjectSummary(ToolModel):
    id: uuid.UUID
    slug: str
    name: str
    org_id: uuid.UUID
    org_slug: str
    org_name: str
    framework: str
    language: str
    is_own: bool = Field(description="the project lives in the caller's personal org")
    created_at: datetime

    @classmethod
    def of(cls, project: Project, principal: Principal) -> ProjectSummary:
        org = project.org
        return cls(id=project.pk, slug=project.slug, name=project.name, org_id=org.pk, org_slug=org.slug,
                   org_name=org.name, framework=project.framework, language=project.language,
                   is_own=org.personal_for_id == principal.user.pk, created_at=project.created_at)


class ListProjectsOut(ToolModel):
    projects: list[ProjectSummary]


class ActiveProject(ToolModel):
    id: uuid.UUID
    slug: str
    name: str
    org_name: str
    source: Literal["token_scope", "first_project_fallback"]


class ActiveProjectOut(ToolModel):
    project: ActiveProject | None = Field(description="null when the user has no project yet")


@tool(
    title="Create a project",
    description=(
        "Creates a project in the user's personal space, or returns the existing one with the same name "
        "(case-insensitive; created=false). Call it before starting work on a new codebase or client, "
        "after brain_list_projects showed no match. Needs a user-scoped token: a token bound to one "
        "project gets FORBIDDEN_PROJECT."
    ),
    read_only=False, idempotent=True,
)
def brain_create_project(principal: Principal, args: CreateProjectIn) -> CreateProjectOut:
    project, created = project_create_named(
        principal=principal, name=args.name, framework=args.framework, language=args.language
    )
    return CreateProjectOut(project_id=project.pk, slug=project.slug, created=created)


@tool(
    title="List projects",
    description=(
        "Lists every project this token can see (the user's own first, then shared orgs); a token bound "
        "to one project sees only that one. Call it before brain_create_project to avoid duplicates, or "
        "to offer the user a project switch."
    ),
    read_only=True,
)
def brain_list_projects(principal: Principal, args: NoArguments) -> ListProjectsOut:
    return ListProjectsOut(projects=[ProjectSummary.of(p, principal) for p in projects_listed(principal=principal)])


@tool(
    title="Get the active project",
    description=(
        "Tells which project a new session would be filed under if no project is named: the token's "
        "project (source token_scope) or the user's first project (source first_project_fallback); "
        "null when there is none yet. Call it before brain_start_session to check it matches the "
        "user's intent."
    ),
    read_only=True,
)
def brain_get_active_project(principal: Principal, args: NoArguments) -> ActiveProjectOut:
    project, source = project_active(principal=principal)
    if project is None or source is None:
        return ActiveProjectOut(project=None)
    return ActiveProjectOut(project=ActiveProject(
        id=project.pk, slug=project.slug, name=project.name, org_name=project.org.name,
        source="token_scope" if source == "token_scope" else "first_project_fallback",
    ))
