"""Autoskill scoring and proposals (approve / reject), and the daily cross-session extract."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.test import override_settings

from brain.errors import Conflict, NotFound, ValidationFailed
from knowledge.models import KnowledgeItem, Proposal, ProposalStatus
from knowledge.selectors.dashboard import proposals_pending
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.proposals import proposal_approve, proposal_reject
from sessions.services.autoskill import autoskill_work, score_candidates
from sessions.services.cross_session import cross_session_run_all
from sessions.services.jobs import session_job_run
from tests.conftest import Tenant
from tests.support.closed_session import closed_session

pytestmark = pytest.mark.django_db
AS_OF = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def heuristic_mode() -> Iterator[None]:
    llm = {**settings.BRAIN_LLM, "model": "", "openai_api_key": "", "anthropic_api_key": "", "dashscope_api_key": ""}
    with override_settings(BRAIN_LLM=llm):
        yield


def test_signals_are_scored_merged_and_conflicts_resolved(tenant_a: Tenant) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project, events=[
        ("user_correction", "Always use black for formatting Python code", {}),       # explicit 5
        ("file_rejected", "", {"path": "migrations/0007_auto.py"}),                    # single 2 ...
        ("file_rejected", "", {"path": "migrations/0007_auto.py"}),                    # ... repeated 3
        ("file_rejected", "", {"path": "docs/index.md"}),                              # single 2: dropped
        ("approval", "Keep the changelog entries short and dated", {}),                # approval 1: dropped
        ("approval", "Prefer httpx over requests for HTTP clients", {}),               # 1 vs explicit 5 below
        ("user_correction", "Never prefer httpx over requests for HTTP clients", {}),
        ("knowledge_rejected", "Use pnpm rather than npm for installs", {"reason": "x"}),  # implicit 2 ...
        ("knowledge_rejected", "use pnpm rather than npm for installs", {"reason": "x"}),  # ... repeated 3
        ("file_accepted", "", {"file": "src/app.py"}),                                   # too short: no signal
    ])
    scored = {c.text: (c.score, c.negative) for c in score_candidates(list(session.events.all()))}
    assert scored == {
        "Always use black for formatting Python code": (5, False),
        "Do not change migrations/0007_auto.py without asking first": (5, True),
        "Never prefer httpx over requests for HTTP clients": (5, True),
        "Use pnpm rather than npm for installs": (5, False),
    }


def test_proposals_wait_then_apply_or_record_why(tenant_a: Tenant, tenant_b: Tenant) -> None:
    skill = knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=KnowledgeDraft(
        type="skill", stage="knowledge", trigger="when formatting Python code",
        content="Format Python code with black using the repository configuration"))
    session = closed_session(user=tenant_a.user, project=tenant_a.project, events=[
        ("user_correction", "Always format Python code with black before committing", {}),
        ("user_correction", "Never commit generated protobuf files to the repository", {}),
    ])
    assert session_job_run(session_id=str(session.id), name="autoskill", work=autoskill_work) == "ok"
    assert autoskill_work(session, None) == 0  # rerun of the same session proposes nothing twice
    pending = {p.kind: p for p in proposals_pending(user=tenant_a.user)}
    assert set(pending) == {"skill_patch", "new_knowledge"} and Proposal.objects.count() == 2
    assert pending["skill_patch"].target_id == skill.id
    assert not proposals_pending(user=tenant_b.user).exists()
    with pytest.raises(NotFound):
        proposal_approve(user=tenant_b.user, proposal_id=pending["skill_patch"].id)

    proposal_approve(user=tenant_a.user, proposal_id=pending["skill_patch"].id)
    skill.refresh_from_db()
    assert skill.content == ("Format Python code with black using the repository configuration\n"
                             "- Always format Python code with black before committing.")
    with pytest.raises(Conflict):
        proposal_approve(user=tenant_a.user, proposal_id=pending["skill_patch"].id)
    with pytest.raises(ValidationFailed):
        proposal_reject(user=tenant_a.user, proposal_id=pending["new_knowledge"].id, reason="  ")
    rejected = proposal_reject(user=tenant_a.user, proposal_id=pending["new_knowledge"].id,
                               reason="we do commit them, CI needs them")
    assert (rejected.status, rejected.decision_reason) == (ProposalStatus.REJECTED, "we do commit them, CI needs them")
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1  # only the skill: rejected adds nothing


def _three_sessions(tenant: Tenant, start: datetime) -> None:
    texts = ["Never use print for debugging output, we use the logging module.",
             "never use print for debugging output; we use the logging module",
             "Always run the type checker before pushing a branch."]
    for day, text in enumerate(texts):
        closed_session(user=tenant.user, project=tenant.project, prompt=f"task {day}",
                       ended_at=start + timedelta(days=day), events=[("user_correction", text, {})])


def test_cross_session_keeps_patterns_seen_twice(
    tenant_a: Tenant, tenant_b: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    _three_sessions(tenant_a, AS_OF - timedelta(days=5))
    closed_session(user=tenant_b.user, project=tenant_b.project, ended_at=AS_OF - timedelta(days=1),
                   events=[("user_correction", "Never use print for debugging output, we use logging.", {})])
    with caplog.at_level(logging.INFO):
        assert cross_session_run_all(as_of=AS_OF) == 1
    row = KnowledgeItem.objects.get(owner=tenant_a.user)
    assert row.type == "anti_principle" and "cross_session" in row.tags
    assert len([t for t in row.tags if t.startswith("session:")]) == 2
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
    skips = [r.op_fields for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "kea.cross.skip"]
    assert skips and skips[0]["newSessionCount"] == 1  # bob closed only one session
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert cross_session_run_all(as_of=AS_OF) == 0  # rerun: nobody has new sessions
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1
    assert sum(1 for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "kea.cross.skip") == 2


def test_a_later_run_does_not_count_the_same_old_sessions_again(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Each run reads a window of the last sessions, old ones included; a pattern only they support was counted
    by the run that first saw it, and reinforcing it on every later run pushed it up the skill stages with no new
    evidence."""
    _three_sessions(tenant_a, AS_OF - timedelta(days=10))
    assert cross_session_run_all(as_of=AS_OF - timedelta(days=6)) == 1
    row = KnowledgeItem.objects.get(owner=tenant_a.user)
    before = (row.success_count, row.confidence)
    for day, text in enumerate(["Always pin the docker base image by digest.", "Write the changelog entry first."]):
        closed_session(user=tenant_a.user, project=tenant_a.project, prompt=f"later {day}",
                       ended_at=AS_OF - timedelta(days=3 - day), events=[("user_correction", text, {})])
    assert cross_session_run_all(as_of=AS_OF) == 0  # two new sessions, nothing they share
    row.refresh_from_db()
    assert (row.success_count, row.confidence) == before  # the old pattern was not reinforced again
    closed_session(user=tenant_a.user, project=tenant_a.project, prompt="again", ended_at=AS_OF - timedelta(hours=5),
                   events=[("user_correction", "Never use print for debugging output; use the logging module.", {})])
    closed_session(user=tenant_a.user, project=tenant_a.project, prompt="more", ended_at=AS_OF - timedelta(hours=4),
                   events=[("user_correction", "Run the formatter before every commit.", {})])
    cross_session_run_all(as_of=AS_OF + timedelta(days=1))
    row.refresh_from_db()
    assert row.success_count == before[0] + 1  # a new session supports it: counted once more, on the same row
    assert KnowledgeItem.objects.filter(owner=tenant_a.user, content__icontains="print for debugging").count() == 1
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
