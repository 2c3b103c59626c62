"""The rows an export writes, scoped in SQL to the caller (own rows, in visible projects or personal)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from brain.errors import NotFound
from knowledge.exporting import TYPE_ORDER, group_key, markdown_document, mdc_document, mdc_name
from knowledge.models import KnowledgeItem
from projects.models import Project, User
from projects.scope import Principal
from projects.selectors.accounts import project_of_user_named, projects_visible

HEAVY = ("embedding", "embedding_bits", "search_vector")  # derived data, rebuilt on import
CHUNK = 500


def knowledge_exported(*, principal: Principal, project: Project | None = None) -> QuerySet[KnowledgeItem]:
    """Every row of the caller (deleted and superseded too), oldest first; only `project`'s when given."""
    rows = KnowledgeItem.objects.filter(owner=principal.user).defer(*HEAVY)
    if project is not None:
        return rows.filter(project=project).order_by("created_at", "id")
    visible = projects_visible(principal=principal).values("id")
    return rows.filter(Q(project__in=visible) | Q(project__isnull=True)).order_by("created_at", "id")


def knowledge_for_markdown(*, principal: Principal, project: Project | None = None) -> QuerySet[KnowledgeItem]:
    """Live rows (not deleted, superseded or action items) in Markdown order: type, globs, trigger, rule, id."""
    order = Case(*(When(type=t, then=Value(i)) for i, t in enumerate(TYPE_ORDER)), output_field=IntegerField())
    rows = knowledge_exported(principal=principal, project=project).filter(
        deleted_at__isnull=True, superseded_by__isnull=True, type__in=TYPE_ORDER)
    return rows.annotate(type_rank=order).order_by("type_rank", "file_globs", "always_apply", "trigger", "content",
                                                   "id")


def markdown_export(*, principal: Principal, project: Project | None, file_name: str) -> Iterator[str]:
    """An AGENTS.md / CLAUDE.md of the caller's live rules (all visible projects, or `project`), streamed."""
    scope = f"project {project.name!r}" if project else f"all projects of {principal.user.email}"
    rows = knowledge_for_markdown(principal=principal, project=project).iterator(chunk_size=CHUNK)
    yield from markdown_document(rows, title=f"{file_name}: rules from External Brain", scope=scope)


def cursor_rules_export(*, principal: Principal, project: Project | None) -> Iterator[tuple[str, str]]:
    """(file name, .mdc text) per group of type, globs and alwaysApply; one group in memory at a time."""
    rows = knowledge_for_markdown(principal=principal, project=project).iterator(chunk_size=CHUNK)
    for key, group in groupby(rows, key=group_key):
        yield mdc_name(key), mdc_document(key, list(group))


def export_project(*, user: User, name: str) -> Project:
    """The user's project of that name (any of their orgs), or NOT_FOUND."""
    project = project_of_user_named(user=user, name=name)
    if project is None:
        raise NotFound(f"{user.email} has no project named {name!r}")
    return project
