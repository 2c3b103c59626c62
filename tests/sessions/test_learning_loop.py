"""Issue 15, the learning loop: learned rules stay in their project, promotion, the relevance floor, score
order and short ids, honest credit, skill stages, the data migration. Real PostgreSQL, a second tenant."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps

from brain.errors import ForbiddenProject, NotFound
from knowledge.injection import build_injection, short_id
from knowledge.models import KnowledgeItem, SkillStage
from knowledge.selectors.live import skills_find
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.promote import knowledge_promote
from knowledge.services.teach import knowledge_teach
from projects.services.accounts import project_ensure_named
from sessions.models import ApplicationRole, Session, SessionEvent, SessionKnowledgeApplication
from sessions.services.credit import IGNORED_PENALTY, REJECTED_PENALTY, USED_BONUS
from sessions.services.events import session_event_record
from sessions.services.extraction import extract_work
from sessions.services.open import session_open
from sessions.services.outcome import OutcomeReport, session_report_outcome
from tests.conftest import Tenant

CORRECTION = "Never use Formik in this repo; build every React form with react-hook-form and zod schemas"
FORM_TASK = "Build the React signup form with validation for email and password"


def _close_with_learning(tenant: Tenant, project_id: str, rule: str = CORRECTION, kind: str = "reflex") -> Session:
    opened = session_open(principal=tenant.principal, prompt=FORM_TASK, project_id=project_id)
    session_report_outcome(principal=tenant.principal, session_id=str(opened.session.id), report=OutcomeReport(
        success=True, learnings=[{"trigger": FORM_TASK, "rule": rule, "type": kind, "source": "user_correction"}]))
    session = Session.objects.get(id=opened.session.id)
    extract_work(session, None)
    return session


def _learned(tenant: Tenant) -> list[KnowledgeItem]:
    return list(KnowledgeItem.objects.filter(owner=tenant.user, source="user_correction"))


def test_a_learned_rule_stays_in_its_project_until_a_second_project_proves_it(tenant_a: Tenant,
                                                                               tenant_b: Tenant) -> None:
    other, _ = project_ensure_named(user=tenant_a.user, name="Other App")
    session = _close_with_learning(tenant_a, str(tenant_a.project.id))
    [row] = _learned(tenant_a)
    assert (row.project_id, row.source_session_id) == (tenant_a.project.id, session.id)
    elsewhere = session_open(principal=tenant_a.principal, prompt=FORM_TASK, project_id=str(other.id))
    assert str(row.id) not in (elsewhere.relevant_knowledge.ids if elsewhere.relevant_knowledge else [])
    again = session_open(principal=tenant_a.principal, prompt=FORM_TASK, project_id=str(tenant_a.project.id))
    assert again.relevant_knowledge is not None and str(row.id) in again.relevant_knowledge.ids
    _close_with_learning(tenant_a, str(other.id))  # the same correction in a second project
    [row] = _learned(tenant_a)
    assert row.project_id is None  # proved in two projects: the owner's scope
    foreign = session_open(principal=tenant_b.principal, prompt=FORM_TASK)
    assert foreign.relevant_knowledge is None and not _learned(tenant_b)


def test_explicit_promotion_and_scope_user_teaching(tenant_a: Tenant, tenant_b: Tenant) -> None:
    with pytest.raises(ForbiddenProject):
        knowledge_teach(principal=tenant_a.project_principal, rule="Use pnpm, never npm", scope="user")
    assert not KnowledgeItem.objects.filter(owner=tenant_a.user).exists()
    taught = knowledge_teach(principal=tenant_a.principal, rule="Use pnpm, never npm", scope="user")
    assert taught.item.project_id is None
    row = knowledge_teach(principal=tenant_a.principal, rule="Pin every dependency in constraints.txt").item
    with pytest.raises(NotFound):
        knowledge_promote(principal=tenant_b.principal, item_id=row.id)
    with pytest.raises(ForbiddenProject):
        knowledge_promote(principal=tenant_a.project_principal, item_id=row.id)
    assert knowledge_promote(principal=tenant_a.principal, item_id=row.id).project_id is None
    assert KnowledgeItem.objects.get(id=row.id).project_id is None


def test_teaching_the_same_rule_three_times_leaves_one_row(tenant_a: Tenant) -> None:
    ids = {knowledge_teach(principal=tenant_a.principal, rule=" Use  pnpm, never npm ").item.id for _ in range(3)}
    assert len(ids) == 1 and KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1


def test_a_prompt_no_rule_fits_gets_nothing_and_is_told_why(tenant_a: Tenant, settings: Any) -> None:
    knowledge_teach(principal=tenant_a.principal, rule=CORRECTION, framework="react")
    opened = session_open(principal=tenant_a.principal, prompt="Draft the release notes for version 2.3")
    assert opened.relevant_knowledge is None and opened.injection_notice.startswith("nothing injected")
    assert not SessionKnowledgeApplication.objects.filter(session=opened.session).exists()
    settings.BRAIN_INJECT = {"floor": 0.0}  # the tunable, as BRAIN_INJECT_FLOOR=0 sets it
    opened = session_open(principal=tenant_a.principal, prompt="Draft the release notes for the React form")
    assert opened.relevant_knowledge is not None


def test_a_rule_of_another_stack_is_withheld(tenant_a: Tenant, settings: Any) -> None:
    settings.BRAIN_INJECT = {"floor": 0.0}
    go = knowledge_teach(principal=tenant_a.principal, rule="Database access goes through database/sql with "
                         "context timeouts", framework="go").item
    opened = session_open(principal=tenant_a.principal, prompt="Add a FastAPI endpoint that reads the database")
    ids = opened.relevant_knowledge.ids if opened.relevant_knowledge else []
    assert str(go.id) not in ids and "another stack" in opened.injection_notice


class _Row:
    def __init__(self, kind: str, content: str, score: float) -> None:
        self.id, self.type, self.trigger, self.content = f"{abs(hash(content)):032x}", kind, "", content
        self.rationale, self.confidence, self.score = "", 0.9, score


def test_injection_is_ordered_by_score_with_short_ids() -> None:
    rows = [_Row("decision", "Deploy on Fridays is fine", 0.2), _Row("reflex", "Run ruff before commit", 0.9),
            _Row("reflex", "Type every function", 0.5)]
    injection = build_injection(rows, budget=1000)
    assert injection.ids == [rows[1].id, rows[2].id, rows[0].id]
    assert injection.text.index("### Reflexes") < injection.text.index("### Decisions")
    assert f"<<knowledge id={short_id(rows[1].id)}>>" in injection.text and "confidence=" not in injection.text
    tight = build_injection(rows, budget=injection.tokens - 10)
    assert rows[1].id in tight.ids and rows[0].id not in tight.ids  # the weakest item gives way


def _injected(tenant: Tenant, texts: list[str]) -> tuple[Session, list[KnowledgeItem]]:
    rows = [knowledge_create(owner=tenant.user, project=tenant.project, draft=KnowledgeDraft(t, confidence=0.8))
            for t in texts]
    opened = session_open(principal=tenant.principal, prompt="x", project_id=str(tenant.project.id))
    SessionKnowledgeApplication.objects.bulk_create([SessionKnowledgeApplication(
        session=opened.session, knowledge=r, role=ApplicationRole.INJECTED) for r in rows])
    return opened.session, rows


def test_close_credits_only_what_was_used(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session, (used, mentioned, ignored, rejected) = _injected(
        tenant_a, ["Use pnpm", "Prefer pathlib", "Squash merge", "Tabs for indentation"])
    foreign = knowledge_create(owner=tenant_b.user, project=tenant_b.project, draft=KnowledgeDraft("Bob's rule"))
    session_event_record(principal=tenant_a.principal, session_id=str(session.id), event_type="knowledge_rejected",
                         payload={"knowledgeId": short_id(rejected.id), "reason": "we use spaces"})
    closed = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=OutcomeReport(
        success=True, knowledge_used=[short_id(used.id), str(foreign.id)],
        summary=f"applied {short_id(mentioned.id)} while moving files"))
    assert closed.knowledge_updated == 4
    after = {r.id: r for r in KnowledgeItem.objects.filter(owner=tenant_a.user)}
    assert after[used.id].success_count == 1 and after[used.id].confidence == pytest.approx(0.8 + USED_BONUS)
    assert after[mentioned.id].success_count == 1
    assert after[ignored.id].success_count == 0 and after[ignored.id].confidence == pytest.approx(
        0.8 - IGNORED_PENALTY)
    assert after[rejected.id].failure_count == 1 and after[rejected.id].confidence == pytest.approx(
        0.8 - REJECTED_PENALTY)
    foreign.refresh_from_db()
    assert (foreign.success_count, foreign.confidence) == (0, 0.7)


def test_a_recipe_grows_up_and_is_found_as_a_skill(tenant_a: Tenant, tenant_b: Tenant) -> None:
    recipe = knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=KnowledgeDraft(
        "To add a Go HTTP handler: write the handler, register it on the ServeMux, add a table-driven test",
        type="recipe", stage=SkillStage.INBOX, confidence=0.8))
    assert not skills_find(principal=tenant_a.principal, query="Go HTTP handler").skills
    for _ in range(3):
        session, _ = _injected(tenant_a, [])
        session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                               report=OutcomeReport(success=True, knowledge_used=[str(recipe.id)]))
    recipe.refresh_from_db()
    assert recipe.stage == SkillStage.KNOWLEDGE and recipe.success_count == 3
    assert [s.id for s in skills_find(principal=tenant_a.principal, query="Go HTTP handler").skills] == [recipe.id]
    assert not skills_find(principal=tenant_b.principal, query="Go HTTP handler").skills


def test_the_migration_moves_projectless_learned_rows_to_their_session_project(tenant_a: Tenant,
                                                                                tenant_b: Tenant) -> None:
    session = session_open(principal=tenant_a.principal, prompt=FORM_TASK).session
    SessionEvent.objects.create(session=session, user=tenant_a.user, project=session.project,
                                event_type="learning_captured", payload={"rule": CORRECTION},
                                occurred_at=session.started_at)
    learned = knowledge_create(owner=tenant_a.user, project=None, draft=KnowledgeDraft(
        CORRECTION, source="user_correction"))
    taught = knowledge_create(owner=tenant_a.user, project=None, draft=KnowledgeDraft("Mine", source="taught"))
    bobs = knowledge_create(owner=tenant_b.user, project=None, draft=KnowledgeDraft(
        CORRECTION, source="user_correction"))
    migration = importlib.import_module("sessions.migrations.0004_i15_learned_rows_to_projects")
    migration.forwards(apps, None)
    learned.refresh_from_db(), taught.refresh_from_db(), bobs.refresh_from_db()
    assert (learned.project_id, learned.source_session_id) == (session.project_id, session.id)
    assert taught.project_id is None and bobs.project_id is None  # another owner's event proves nothing
