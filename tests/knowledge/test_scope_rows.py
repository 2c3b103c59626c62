"""The size of each scope, kept by database triggers (`ScopeRows`, migration 0017): after every kind of write the kept
count a search reads equals counting the scope's rows, for each reader, and nobody's writes move another tenant's."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import KnowledgeItem, KnowledgeType, ScopeRows
from knowledge.search import Fusion, hybrid_candidates
from knowledge.selectors.search import KNOWLEDGE_TABLE, knowledge_scope
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.services.review import knowledge_review_decide
from knowledge.services.scope_rows import scope_rows_recount
from projects.scope import Principal
from tests.conftest import Tenant
from tests.knowledge.team import make_team

DRAFTS = [KnowledgeDraft(f"Deploy service number {n} through the release pipeline") for n in range(6)]


def kept_and_counted(principal: Principal, project_id: uuid.UUID | None = None) -> tuple[int, int]:
    """The scope's kept count as a search reads it, and its rows counted one by one."""
    scope = knowledge_scope(principal=principal, project_id=project_id)
    assert scope.rows_sql
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {scope.rows_sql}, (SELECT count(*) FROM {KNOWLEDGE_TABLE} t WHERE {scope.sql})",
                       scope.params)
        kept, counted = cursor.fetchone()
    return int(kept), int(counted)


def assert_kept(principal: Principal, rows: int, project_id: uuid.UUID | None = None) -> None:
    assert kept_and_counted(principal, project_id) == (rows, rows)


def test_every_kind_of_write_keeps_the_count(tenant_a: Tenant, tenant_b: Tenant) -> None:
    a, b = tenant_a.principal, tenant_b.principal
    mine = knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=DRAFTS)
    knowledge_create_many(owner=tenant_a.user, project=None, drafts=DRAFTS[:2])  # A's project-less rows
    knowledge_create_many(owner=tenant_b.user, project=tenant_b.project, drafts=DRAFTS[:3])
    assert_kept(a, 8)
    assert_kept(b, 3)
    rows = KnowledgeItem.objects.filter(id__in=[item.id for item in mine])
    rows.filter(id=mine[0].id).update(deleted_at=datetime.now(UTC))
    rows.filter(id=mine[1].id).update(superseded_by=mine[2])
    rows.filter(id=mine[2].id).update(decay_score=0.3)  # at the floor: decayed out
    rows.filter(id=mine[3].id).update(decay_score=0.31, confidence=0.2)  # above it, and a credit update
    assert_kept(a, 5)
    rows.filter(id=mine[2].id).update(type=KnowledgeType.DECISION)  # a decision never decays out
    rows.filter(id=mine[3].id).update(type=KnowledgeType.ACTION_ITEM)  # never retrieved
    assert_kept(a, 5)
    rows.filter(id=mine[4].id).update(review_status="rejected")
    rows.filter(id=mine[5].id).update(project=None)  # moved to A's project-less rows: still A's
    assert_kept(a, 4)
    rows.filter(id=mine[5].id).update(project=tenant_b.project, owner=tenant_b.user)  # handed to B
    assert_kept(a, 3)
    assert_kept(b, 4)
    KnowledgeItem.objects.filter(owner=tenant_a.user).delete()
    assert_kept(a, 0)
    assert_kept(b, 4)


def test_a_rule_held_for_review_counts_only_for_its_author(tenant_a: Tenant, tenant_b: Tenant) -> None:
    team = make_team(tenant_a)
    team.org.require_member_review = True
    team.org.save(update_fields=["require_member_review"])
    team.teach(team.owner, "Run the smoke tests before every release of the shared service")
    held = team.teach(team.member, "Tag every release of the shared service with its changelog entry")
    assert held.item.review_status == "pending"
    assert_kept(team.owner, 1, team.project.id)  # the member's rule waits for the owner's review
    assert_kept(team.member, 2, team.project.id)  # its author retrieves it meanwhile
    knowledge_review_decide(principal=team.owner, item_id=held.item.id, approve=True)
    assert_kept(team.owner, 2, team.project.id)
    assert_kept(team.member, 2, team.project.id)
    assert_kept(tenant_b.principal, 0)


def test_a_search_reads_the_kept_count_and_scores_as_if_it_counted(tenant_a: Tenant, tenant_b: Tenant,
                                                                    settings: Any) -> None:
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        *DRAFTS, KnowledgeDraft("Roll back the release pipeline when the error rate doubles")])
    knowledge_create_many(owner=tenant_b.user, project=tenant_b.project, drafts=DRAFTS)
    scope = knowledge_scope(principal=tenant_a.principal)
    counting = replace(scope, rows_sql="")  # the same scope, its rows counted
    found = {}
    for name, searched in (("kept", scope), ("counted", counting)):
        with CaptureQueriesContext(connection) as queries:
            result = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", scope=searched, mode="fts",
                                       query="roll back the release pipeline", fusion=Fusion())
        sizing = [q["sql"] for q in queries.captured_queries if "tsvector_to_array" in q["sql"]]
        assert len(sizing) == 1 and ("knowledge_scoperows" in sizing[0]) is (name == "kept")
        found[name] = [(c.id, c.fts_score) for c in result.candidates]
    assert found["kept"] == found["counted"] and len(found["kept"]) == 7
    theirs = {item.id for item in KnowledgeItem.objects.filter(owner=tenant_b.user)}
    assert not {pk for pk, _ in found["kept"]} & theirs
    narrowed = scope.narrowed("t.type = ANY(%(types)s)", types=["rule"])
    assert not narrowed.rows_sql  # a narrower condition than the kept count's: counted
    settings.BRAIN_RETRIEVAL = {**settings.BRAIN_RETRIEVAL, "decay_floor": 0.5}
    assert not knowledge_scope(principal=tenant_a.principal).rows_sql  # another floor than the kept count's


def test_the_nightly_recount_corrects_counts_a_write_bypassed(tenant_a: Tenant, tenant_b: Tenant,
                                                              caplog: Any) -> None:
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=DRAFTS)
    knowledge_create_many(owner=tenant_b.user, project=tenant_b.project, drafts=DRAFTS[:2])
    assert scope_rows_recount() == 0  # the triggers kept every count
    with connection.cursor() as cursor:  # what a restore or a replica applying rows without triggers leaves behind
        cursor.execute("SET LOCAL session_replication_role = replica")
        knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=DRAFTS[:3])
        cursor.execute("SET LOCAL session_replication_role = origin")
        cursor.execute("INSERT INTO knowledge_scoperows (scope, rows) VALUES (%s, 4)", [f"project:{uuid.uuid4()}"])
    assert kept_and_counted(tenant_a.principal) == (6, 9)
    assert scope_rows_recount() == 2
    assert_kept(tenant_a.principal, 9)
    assert_kept(tenant_b.principal, 2)
    assert "op=knowledge.scope_rows_recounted" in caplog.text and "corrected=2" in caplog.text
    assert ScopeRows.objects.filter(rows=4).count() == 0  # the scope that has no rows is gone
    assert scope_rows_recount() == 0
