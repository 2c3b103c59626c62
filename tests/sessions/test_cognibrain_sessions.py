"""Current sessions, tool-outcome memories, the token budget of context packs and the dream-due rule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem
from knowledge.nightly import NightlyScope
from knowledge.selectors.guard import guard_check
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.tokens import token_count, token_counts
from sessions.models import ApplicationRole, Session, SessionKnowledgeApplication
from sessions.services.cognibrain import outcome_record, stderr_similar
from sessions.services.context_pack import context_pack
from sessions.services.current import cognibrain_sessions_sweep, session_current
from sessions.services.dream import DREAM_WRITES, dream_due, dream_queue_if_due
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
STDERR = "Error: ERR_PNPM_NO_LOCKFILE Cannot install with frozen-lockfile because pnpm-lock.yaml is absent (code 1)"


def test_one_current_session_per_user_and_project(tenant_a: Tenant, tenant_b: Tenant) -> None:
    first = session_current(principal=tenant_a.principal, repo="acme/web")
    assert session_current(principal=tenant_a.principal) == first  # no repo: the open one
    other = session_current(principal=tenant_a.principal, repo="acme/api")
    assert other != first and other.project.name == "acme/api"
    assert session_current(principal=tenant_a.principal, repo="ACME/web") == first
    theirs = session_current(principal=tenant_b.principal, repo="acme/web")
    assert theirs.user == tenant_b.user and theirs.project.org != first.project.org
    scoped = session_current(principal=tenant_a.project_principal, repo="acme/web")
    assert scoped.project == tenant_a.project


def test_sweep_closes_idle_sessions_as_abandoned(tenant_a: Tenant) -> None:
    session = session_current(principal=tenant_a.principal)
    assert cognibrain_sessions_sweep(now=timezone.now() + timedelta(hours=1)) == 0
    assert cognibrain_sessions_sweep(now=timezone.now() + timedelta(hours=2, minutes=1)) == 1
    session.refresh_from_db()
    assert session.ended_at is not None and session.success is False
    assert "abandoned" in str(session.outcome)
    assert session_current(principal=tenant_a.principal) != session


def test_a_session_that_got_a_call_after_the_sweep_listed_it_stays_open(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from sessions.services.cognibrain import outcome_record
    from sessions.services.current import close_if_still_idle

    busy, idle = session_current(principal=tenant_a.principal), session_current(principal=tenant_b.principal)
    Session.objects.filter(pk__in=[busy.pk, idle.pk]).update(started_at=timezone.now() - timedelta(hours=3))
    cutoff = timezone.now() - timedelta(hours=2)
    outcome_record(session=busy, command="npm test", exit_code=0)  # the call that came after the listing
    assert close_if_still_idle(session_id=busy.pk, cutoff=cutoff) is False
    assert close_if_still_idle(session_id=idle.pk, cutoff=cutoff) is True
    assert Session.objects.get(pk=busy.pk).ended_at is None and Session.objects.get(pk=idle.pk).success is False
    assert close_if_still_idle(session_id=idle.pk, cutoff=cutoff) is False  # closed once


def test_failing_twice_then_another_success_teaches_the_guard(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = session_current(principal=tenant_a.principal)
    first = outcome_record(session=session, command="pnpm install", exit_code=1, stderr=STDERR)
    assert first.memory_id is None
    second = outcome_record(session=session, command="pnpm  install", exit_code=1, stderr=STDERR.replace("1)", "2)"))
    assert second.memory_id is not None
    third = outcome_record(session=session, command="pnpm install", exit_code=1, stderr=STDERR)
    assert third.memory_id is None  # one memory per command
    solved = outcome_record(session=session, command="npm ci", exit_code=0)
    assert solved.alternative_for == second.memory_id
    verdict = guard_check(owner_id=tenant_a.user.id, project_id=session.project_id, action="pnpm install",
                          semantic=False)
    assert verdict.allowed and "npm ci" in verdict.warnings[0] and "ERR_PNPM_NO_LOCKFILE" in verdict.warnings[0]
    theirs = session_current(principal=tenant_b.principal)
    assert not guard_check(owner_id=tenant_b.user.id, project_id=theirs.project_id, action="pnpm install").warnings


def test_different_failures_teach_nothing(tenant_a: Tenant) -> None:
    session = session_current(principal=tenant_a.principal)
    outcome_record(session=session, command="make", exit_code=2, stderr="missing separator in Makefile line 3")
    later = outcome_record(session=session, command="make", exit_code=2, stderr="cc: command not found")
    assert later.memory_id is None
    assert stderr_similar("", "") and not stderr_similar("a b c", "x y z")


@pytest.fixture
def corpus(tenant_a: Tenant) -> None:
    kinds = ["anti_principle", "recipe", "heuristic", "decision", "rule", "reflex"]
    drafts = [KnowledgeDraft(content=f"When building the web app step {i}: run npm run build then check output "
                             f"folder {i} and never skip lint " + "details " * (i % 7), type=kinds[i % 6],
                             confidence=0.9) for i in range(60)]
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=drafts)


@pytest.mark.parametrize("budget", [50, 120, 300, 700, 1200, 2500, 4000])
def test_token_count_never_above_budget(corpus: None, tenant_a: Tenant, budget: int) -> None:
    session = session_current(principal=tenant_a.principal)
    pack = context_pack(principal=tenant_a.principal, session=session, task="build the web app", budget=budget)
    assert pack.token_count == token_count(pack.context) <= budget
    assert pack.ids and len(pack.ids) == pack.context.count("\n- ") + pack.context.startswith("- ")
    headers = [line for line in pack.context.splitlines() if line.startswith("## ")]
    order = ["Forbidden", "Procedures", "Previous", "Known", "Decisions", "Commands"]
    ranks = [next(i for i, o in enumerate(order) if h[3:].startswith(o)) for h in headers]
    assert ranks == sorted(ranks)


def test_a_pack_records_each_item_once_per_session(corpus: None, tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = session_current(principal=tenant_a.principal)
    first = context_pack(principal=tenant_a.principal, session=session, task="build the web app", budget=300)
    again = context_pack(principal=tenant_a.principal, session=session, task="build the web app", budget=300)
    assert first.ids and again.ids == first.ids
    rows = SessionKnowledgeApplication.objects.filter(session=session)
    assert sorted(str(k) for k in rows.values_list("knowledge_id", flat=True)) == sorted(first.ids)
    assert set(rows.values_list("role", "outcome")) == {(ApplicationRole.INJECTED, None)}
    assert all(r.created_at == r.updated_at and r.created_at <= timezone.now() for r in rows)
    other = session_current(principal=tenant_b.principal)
    assert context_pack(principal=tenant_b.principal, session=other, task="build the web app", budget=300).ids == []
    assert not SessionKnowledgeApplication.objects.filter(session=other).exists()


def test_lines_count_alone_what_they_count_joined() -> None:
    """The pack counts each line once (memoised) and adds them up: that sum must be the joined text's own count."""
    lines = ["## Forbidden actions and repo policies", "- Never run `rm -rf /` (taught by Zoë Ångström)",
             "- 用 pnpm 安装依赖\uff0c不要用 npm", "- état: café—naïve façade… ok?!", "- emoji 🚀🔥 and tabs\tinside",
             "- path/to/file.py:42 -> foo_bar(baz=1, qux='x')", "", "- ÅÄÖ ÀÉÎ ﬁ ligature and ½ fractions"]
    counts = token_counts(lines)
    assert counts == [token_count(line) for line in lines] == token_counts(lines)  # the memo answers the same
    assert token_count("\n".join(lines)) == sum(counts) and counts[6] == 0


def test_context_leaves_out_superseded_deleted_decayed_and_unverified(tenant_a: Tenant) -> None:
    texts = ["deploy with the blue pipeline", "deploy with the red pipeline", "deploy with the green pipeline",
             "deploy with the gold pipeline", "deploy with the grey pipeline"]
    rows = knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content=t, type="recipe", confidence=0.9) for t in texts])
    KnowledgeItem.objects.filter(id=rows[1].id).update(superseded_by=rows[0])
    KnowledgeItem.objects.filter(id=rows[2].id).update(deleted_at=timezone.now())
    KnowledgeItem.objects.filter(id=rows[3].id).update(decay_score=0.1)
    KnowledgeItem.objects.filter(id=rows[4].id).update(confidence=0.2)
    session = session_current(principal=tenant_a.principal)
    pack = context_pack(principal=tenant_a.principal, session=session, task="deploy pipeline", budget=1200)
    assert pack.ids == [str(rows[0].id)]


def test_dream_due_with_frozen_time(tenant_a: Tenant) -> None:
    scope = NightlyScope(project_id=tenant_a.project.id, owner_id=None)
    now = timezone.now()
    assert dream_due(scope=scope, now=now).reason == "nothing_to_do"
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project,
                          drafts=[KnowledgeDraft(content="first write here", confidence=0.9)])
    first = dream_queue_if_due(owner=tenant_a.user, scope=scope, now=now)
    assert (first.due, first.reason) == (True, "first_cycle")
    assert dream_due(scope=scope, now=now + timedelta(minutes=59)).reason == "ran_within_the_hour"
    assert dream_due(scope=scope, now=now + timedelta(hours=2)).reason == "not_due"
    assert dream_due(scope=scope, now=now + timedelta(hours=24)).reason == "daily"
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content=f"write number {i}", confidence=0.9) for i in range(DREAM_WRITES)])
    later = now + timedelta(hours=1, minutes=1)
    assert (dream_due(scope=scope, now=later).due, dream_due(scope=scope, now=later).reason) == (True, "writes")
    assert dream_due(scope=scope, now=now + timedelta(minutes=30)).due is False  # writes or not: once an hour
    assert DreamRun.objects.filter(scope=scope.key).count() == 1
    other = NightlyScope(project_id=None, owner_id=tenant_a.user.id)
    assert dream_due(scope=other, now=now).due is False


def test_sessions_are_recorded_like_any_other(tenant_a: Tenant) -> None:
    session = session_current(principal=tenant_a.principal)
    assert Session.objects.get(id=session.id).client_type == "cognibrain"
