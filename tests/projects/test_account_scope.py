"""The project-scoped-token refusals live in the core: `account_user` for whole-account actions and the
curation services for personal knowledge, so every interface (REST, MCP, a future one) gets them as is."""

from __future__ import annotations

import uuid

import pytest

from brain.errors import ForbiddenProject, NotFound
from knowledge.models import KnowledgeItem
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.curate import knowledge_delete, knowledge_edit, knowledge_supersede
from projects.models import Project
from projects.selectors.addressed import account_user
from projects.services.accounts import project_create_named, project_ensure_named
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db
JSON = "application/json"


def test_account_user_refuses_only_project_scoped_tokens(tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert account_user(principal=tenant_a.principal, action="manage tokens") == tenant_a.user
    assert account_user(principal=tenant_b.principal, action="manage tokens") == tenant_b.user
    with pytest.raises(ForbiddenProject, match=r"^a project-scoped token cannot manage tokens; use a user-scoped"):
        account_user(principal=tenant_a.project_principal, action="manage tokens")


def test_project_create_is_refused_in_the_service(tenant_a: Tenant) -> None:
    before = Project.objects.count()
    with pytest.raises(ForbiddenProject, match="project-scoped"):
        project_create_named(principal=tenant_a.project_principal, name="Elsewhere")
    with pytest.raises(NotFound):  # an org the caller is not in: the same answer as a missing one
        project_create_named(principal=tenant_a.principal, name="Elsewhere", org_id=uuid.uuid4())
    assert Project.objects.count() == before


def test_curation_through_a_project_token_reaches_only_its_project(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Personal rows are as far out of a project-scoped token's reach as another project's (the spec's matrix)."""
    personal = knowledge_create(owner=tenant_a.user, project=None, draft=KnowledgeDraft(content="Prefer tabs"))
    side, _ = project_ensure_named(user=tenant_a.user, name="Side")
    other = knowledge_create(owner=tenant_a.user, project=side, draft=KnowledgeDraft(content="Side uses sqlite"))
    mine = knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=KnowledgeDraft(content="Use ruff"))
    scoped = tenant_a.project_principal
    for row, error in ((personal, NotFound), (other, NotFound)):
        with pytest.raises(error):
            knowledge_edit(principal=scoped, item_id=row.id, content="Changed rule", trigger="", rationale="",
                           type=row.type, tags=[], confidence=0.5)
        with pytest.raises(error):
            knowledge_supersede(principal=scoped, item_id=row.id, content="Changed rule")
        with pytest.raises(error):
            knowledge_delete(principal=scoped, item_id=row.id)
    with pytest.raises(NotFound):  # the other tenant's token reaches nothing of alice's
        knowledge_delete(principal=tenant_b.project_principal, item_id=mine.id)
    assert knowledge_edit(principal=scoped, item_id=mine.id, content="Use ruff always", trigger="", rationale="",
                          type=mine.type, tags=[], confidence=0.5).content == "Use ruff always"
    api_error(bearer(tenant_a.project_raw).post(f"/api/v1/knowledge/{personal.id}/supersede",
                                                {"rule": "Tabs everywhere"}, content_type=JSON),
              404, "NOT_FOUND")
    for row in (personal, other):
        row.refresh_from_db()
        assert row.deleted_at is None and row.superseded_by_id is None and row.content in ("Prefer tabs",
                                                                                           "Side uses sqlite")
    assert KnowledgeItem.objects.count() == 3
