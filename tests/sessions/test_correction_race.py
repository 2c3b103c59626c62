"""A correction's supersede takes only rows still live as it writes: a row a concurrent teach superseded meanwhile
keeps that link (before, the correction overwrote it, and the audit log named a successor the row no longer had)."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem, KnowledgeType
from knowledge.services.create import KnowledgeDraft, knowledge_create
from sessions.services.cognibrain import Corrected, correction_record
from sessions.services.current import session_current
from tests.conftest import Tenant
from tests.support.race import while_uncommitted

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_row_superseded_meanwhile_keeps_its_successor(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = session_current(principal=tenant_a.principal, repo="acme/web")

    def row(text: str) -> KnowledgeItem:
        return knowledge_create(owner=tenant_a.user, project=session.project,
                                draft=KnowledgeDraft(content=text, type=KnowledgeType.HEURISTIC))

    old, successor, kept = row("Run pnpm test before pushing"), row("Run the full suite"), row("Run pnpm test often")
    theirs = knowledge_create(owner=tenant_b.user, project=tenant_b.project,
                              draft=KnowledgeDraft(content="Run pnpm test in CI", type=KnowledgeType.HEURISTIC))
    done: list[Corrected] = []
    errors = while_uncommitted(  # a supersede of `old`, committed while the correction waits on its row
        lambda: KnowledgeItem.objects.filter(pk=old.pk).update(superseded_by=successor),
        lambda: done.append(correction_record(session=session, text="Use npm test, not pnpm test")), wait=1.0)
    assert errors == []
    assert done, "the correction did not finish"
    recipe = next(r for r in done[0].stored if r.type == KnowledgeType.RECIPE)
    assert KnowledgeItem.objects.get(pk=old.pk).superseded_by_id == successor.id
    assert KnowledgeItem.objects.get(pk=kept.pk).superseded_by_id == recipe.id
    assert done[0].superseded == [kept.id]
    assert KnowledgeItem.objects.get(pk=theirs.pk).superseded_by_id is None
