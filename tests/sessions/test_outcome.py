"""Closing sessions: SQS, the confidence loop, learnings, action items, jobs, idempotency, ownership."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from brain.errors import Conflict, NotFound, ValidationFailed
from knowledge.models import KnowledgeItem
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.teach import knowledge_teach
from projects.services.accounts import project_ensure_named
from sessions.models import ApplicationRole, Session, SessionEvent, SessionJob, SessionKnowledgeApplication
from sessions.outcome_rules import HINT_GENTLE, HINT_STRONG, quality_score
from sessions.services.open import session_open
from sessions.services.outcome import OutcomeReport, session_report_outcome
from tests.conftest import Tenant
from tests.support.closed_session import closed_session

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"success": True, "errors": 0, "user_feedback": "up", "files_created": 2, "files_modified": 1,
          "files_rejected": 0, "build_attempts": 1}, 100),
        # partial build 0.5, no feedback 0.5, no files 0.5, one retry: 100*(0.2+0.125+0.125+0.09) = 54
        ({"success": False, "errors": 0, "user_feedback": None, "files_created": 0, "files_modified": 0,
          "files_rejected": 0, "build_attempts": 2}, 54),
        # failed, thumbs down, 1 of 4 files kept, penalty capped at 0.5: 100*(0+0+0.0625+0.05) = 11.25
        ({"success": False, "errors": 3, "user_feedback": "down", "files_created": 1, "files_modified": 0,
          "files_rejected": 3, "build_attempts": 9}, 11),
        # 0.55 exactly must round half up to 55, not fall to 54 through float noise
        ({"success": False, "errors": 0, "user_feedback": None, "files_created": 0, "files_modified": 0,
          "files_rejected": 0, "build_attempts": 1}, 55),
    ],
)
def test_quality_score(kwargs: dict, expected: int) -> None:
    assert quality_score(**kwargs).sqs == expected


def _rule(tenant: Tenant, text: str) -> KnowledgeItem:
    return knowledge_teach(principal=tenant.principal, type="reflex", trigger="writing pydantic validators",
                           rule=text, project_id=str(tenant.project.id)).item


def test_close_runs_confidence_loop_once(tenant_a: Tenant, tenant_b: Tenant) -> None:
    injected = _rule(tenant_a, "use field_validator with mode='after'")
    reported = knowledge_teach(principal=tenant_a.principal, type="recipe", rule="bump the lockfile in CI",
                               project_id=str(tenant_a.project.id)).item
    foreign = _rule(tenant_b, "bob's private rule")
    session = session_open(principal=tenant_a.principal, prompt="add a pydantic validator").session
    report = OutcomeReport(success=True, user_feedback="up", files_created=1, knowledge_used=[
        str(injected.id), str(reported.id), str(foreign.id), "garbage"])
    first = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=report)
    assert first.scores.sqs == 100 and first.already_closed is False and first.jobs_queued is True
    assert first.knowledge_updated == 2 and first.hint == HINT_GENTLE
    second = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=report)
    assert second == dataclasses.replace(first, already_closed=True)
    counts = {k.id: (k.success_count, k.failure_count) for k in KnowledgeItem.objects.all()}
    assert counts[injected.id] == (1, 0) and counts[reported.id] == (1, 0) and counts[foreign.id] == (0, 0)
    roles = set(SessionKnowledgeApplication.objects.filter(session=session).values_list("knowledge_id", "role"))
    assert (reported.id, ApplicationRole.USED_REPORTED) in roles and (injected.id, ApplicationRole.INJECTED) in roles
    outcomes = SessionKnowledgeApplication.objects.filter(session=session).values_list("role", "outcome")
    assert {role for role, _ in outcomes} == {ApplicationRole.INJECTED, ApplicationRole.USED_REPORTED}
    assert {outcome for _, outcome in outcomes} == {True}  # the new rows and the injected ones alike
    assert set(SessionJob.objects.filter(session=session).values_list("name", flat=True)) == {"extract", "autoskill"}


def test_a_project_token_credits_only_rows_it_can_see(tenant_a: Tenant, tenant_b: Tenant) -> None:
    side = project_ensure_named(user=tenant_a.user, name="Side")[0]
    visible = _rule(tenant_a, "keep validators pure")
    personal = knowledge_create(owner=tenant_a.user, project=None, draft=KnowledgeDraft("Name branches by ticket"))
    elsewhere = knowledge_create(owner=tenant_a.user, project=side, draft=KnowledgeDraft("Side project rule"))
    foreign = _rule(tenant_b, "bob's private rule")
    scoped = tenant_a.project_principal
    session = session_open(principal=scoped).session
    closed = session_report_outcome(principal=scoped, session_id=str(session.id), report=OutcomeReport(
        success=True, knowledge_used=[str(r.id) for r in (visible, personal, elsewhere, foreign)]))
    assert closed.knowledge_updated == 2
    counts = {k.id: k.success_count for k in KnowledgeItem.objects.all()}
    assert (counts[visible.id], counts[personal.id], counts[elsewhere.id], counts[foreign.id]) == (1, 1, 0, 0)
    reported = set(SessionKnowledgeApplication.objects.filter(session=session).values_list("knowledge_id", flat=True))
    assert reported == {visible.id, personal.id}


def test_failure_counts_and_strong_hint(tenant_a: Tenant) -> None:
    rule = _rule(tenant_a, "use field_validator with mode='after'")
    session = session_open(principal=tenant_a.principal).session
    result = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=OutcomeReport(
        success=True, user_feedback="down", knowledge_used=[str(rule.id)]))
    assert result.hint == HINT_STRONG
    rule.refresh_from_db()
    assert (rule.success_count, rule.failure_count) == (0, 1)
    assert list(SessionKnowledgeApplication.objects.filter(session=session).values_list("role", "outcome")) == [
        (ApplicationRole.USED_REPORTED, False)]
    stored = Session.objects.get(id=session.id)  # the close's own UPDATE wrote every outcome field
    assert (stored.success, stored.user_feedback, stored.quality_score) == (True, "down", result.scores.sqs)
    assert stored.ended_at is not None and stored.updated_at == stored.ended_at
    assert stored.outcome["report"]["userFeedback"] == "down" and stored.outcome["result"]["sqs"] == result.scores.sqs


def test_no_ask_back_when_learnings_were_sent_even_if_all_were_dropped(tenant_a: Tenant, tenant_b: Tenant) -> None:
    sent = session_open(principal=tenant_a.principal).session
    result = session_report_outcome(principal=tenant_a.principal, session_id=str(sent.id),
                                    report=OutcomeReport(success=False, learnings=[{"trigger": "x"}, "junk"]))
    assert result.learnings_accepted == () and [d.index for d in result.learnings_dropped] == [0, 1]
    assert result.hint is None  # the agent did try: the reasons it gets back say what to fix
    silent = session_open(principal=tenant_b.principal).session
    quiet = session_report_outcome(principal=tenant_b.principal, session_id=str(silent.id),
                                   report=OutcomeReport(success=False))
    assert quiet.hint == HINT_STRONG


def test_a_flood_of_learnings_gets_a_short_answer_and_a_short_record(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """A megabyte of learnings (half a million items) was as many reasons in the answer and in the stored close."""
    session = session_open(principal=tenant_a.principal).session
    good = {"trigger": "when adding forms", "rule": "use react-hook-form with zod", "rationale": "team standard"}
    result = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                                    report=OutcomeReport(success=True, learnings=[good] * 3 + [0] * 100_000))
    assert [a.index for a in result.learnings_accepted] == [0, 1, 2]
    assert [d.index for d in result.learnings_dropped] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert "the 99992 after it were not read" in result.learnings_dropped[-1].reason
    session.refresh_from_db()
    assert len(session.outcome["result"]["learnings"]["dropped"]) == 8
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_learnings_validated_one_by_one(tenant_a: Tenant) -> None:
    session = session_open(principal=tenant_a.principal).session
    good = {"trigger": "when adding forms", "rule": "use react-hook-form with zod", "rationale": "team standard",
            "type": "reflex", "source": "user_correction", "confidence": 0.9}
    learnings = [good, {"trigger": "x"}, "not an object", {**good, "type": "spell"}, {**good, "confidence": 7},
                 {**good, "rule": "second good rule"}, {**good, "rule": "sixth, over the limit"}]
    result = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                                    report=OutcomeReport(success=False, learnings=learnings))
    assert [a.index for a in result.learnings_accepted] == [0]
    assert [d.index for d in result.learnings_dropped] == [1, 2, 3, 4, 5, 6]
    assert result.hint is None
    events = SessionEvent.objects.filter(session=session, event_type="learning_captured")
    assert [e.payload["rule"] for e in events] == ["use react-hook-form with zod"]


def test_errors_events_make_a_failed_build(tenant_a: Tenant) -> None:
    session = session_open(principal=tenant_a.principal).session
    SessionEvent.objects.create(session=session, user=tenant_a.user, project=tenant_a.project, event_type="error",
                                content="boom", occurred_at=session.started_at)
    result = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                                    report=OutcomeReport(success=False))
    assert result.scores.build == 0.0


def test_resolved_action_items_only_in_session_project(tenant_a: Tenant) -> None:
    def item(project_id: str) -> str:
        return str(knowledge_teach(principal=tenant_a.principal, type="action_item", rule="ship it",
                                   project_id=project_id, tags=["action-item", "for:alice@a.example"]).item.id)

    here = item(str(tenant_a.project.id))
    elsewhere_session = session_open(principal=tenant_a.principal, project_name="Elsewhere").session
    elsewhere = item(str(elsewhere_session.project_id))
    rule = _rule(tenant_a, "a rule, not a task")
    session = session_open(principal=tenant_a.principal).session
    result = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=OutcomeReport(
        success=True, resolved_action_item_ids=[here, elsewhere, str(rule.id), "junk"]))
    assert result.action_items_resolved == 1
    retired = set(KnowledgeItem.objects.filter(deleted_at__isnull=False).values_list("id", flat=True))
    assert retired == {uuid.UUID(here)}


def test_ownership_and_validation(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = session_open(principal=tenant_a.principal).session
    ok = OutcomeReport(success=True)
    for principal, sid in ((tenant_b.principal, str(session.id)), (tenant_a.principal, str(uuid.uuid4())),
                           (tenant_a.principal, "nope")):
        with pytest.raises(NotFound):
            session_report_outcome(principal=principal, session_id=sid, report=ok)
    other = session_open(principal=tenant_a.principal, project_name="Side").session
    with pytest.raises(NotFound):  # a project token reaches only sessions of its project
        session_report_outcome(principal=tenant_a.project_principal, session_id=str(other.id), report=ok)
    for bad in (OutcomeReport(success=True, user_feedback="meh"), OutcomeReport(success=True, build_attempts=0),
                OutcomeReport(success=True, resolved_action_item_ids=["x"] * 51)):
        with pytest.raises(ValidationFailed):
            session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=bad)
    session.refresh_from_db()
    assert session.ended_at is None
    result = session_report_outcome(principal=tenant_a.project_principal, session_id=str(session.id), report=ok)
    assert result.already_closed is False


def test_repeat_on_a_session_closed_without_report_is_a_conflict(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project)  # ended, but never reported
    with pytest.raises(NotFound):
        session_report_outcome(principal=tenant_b.principal, session_id=str(session.id),
                               report=OutcomeReport(success=True))
    with pytest.raises(Conflict) as refused:
        session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                               report=OutcomeReport(success=False, user_feedback="down"))
    assert "start a new session" in refused.value.message
    stored = Session.objects.get(id=session.id)
    assert (stored.ended_at, stored.success, stored.outcome, stored.quality_score) == (
        session.ended_at, True, {}, None)
    assert not SessionJob.objects.filter(session=session).exists()


def test_repeat_returns_the_stored_result_field_for_field(tenant_a: Tenant) -> None:
    session = session_open(principal=tenant_a.principal).session
    report = OutcomeReport(success=True, files_modified=2, files_rejected=1,
                           learnings=[{"trigger": "when naming", "rule": "use nouns for models"}, "junk"])
    first = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id), report=report)
    assert [(a.index, a.rule) for a in first.learnings_accepted] == [(0, "use nouns for models")]
    assert [d.index for d in first.learnings_dropped] == [1] and first.hint is None
    stored = Session.objects.get(id=session.id).outcome["result"]
    assert stored["alreadyClosed"] is False and stored["scores"]["diffAcceptance"] == first.scores.diff_acceptance
    again = session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                                   report=OutcomeReport(success=False))
    assert again == dataclasses.replace(first, already_closed=True)
