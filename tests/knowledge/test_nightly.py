"""Decay and evolution on crafted rows with a fixed `as_of` (frozen time): numbers, idempotency, scopes."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from brain.celery import app
from knowledge.models import Contradiction, HealthSnapshot, KnowledgeItem
from knowledge.nightly import NightlyScope, nightly_scopes
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.decay import decay_scope_run
from knowledge.services.evolution import evolution_scope_run
from knowledge.tasks import nightly_decay
from tests.conftest import Tenant
from tests.support.fake_llm import FakeLlm, fake_llm_server

AS_OF = datetime(2026, 6, 1, tzinfo=UTC)
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def heuristic_mode() -> Iterator[None]:
    llm = {**settings.BRAIN_LLM, "model": "", "openai_api_key": "", "anthropic_api_key": "", "dashscope_api_key": ""}
    with override_settings(BRAIN_LLM=llm):
        yield


def _row(tenant: Tenant, content: str, *, days_unused: float, project: bool = True, **fields: Any) -> KnowledgeItem:
    draft_fields = {k: fields.pop(k) for k in ("type", "framework", "source", "tags") if k in fields}
    item = knowledge_create(owner=tenant.user, project=tenant.project if project else None,
                            draft=KnowledgeDraft(content=content, trigger="when writing code here", **draft_fields))
    when = AS_OF - timedelta(days=days_unused)
    KnowledgeItem.objects.filter(id=item.id).update(created_at=when - timedelta(days=1), last_used_at=when, **fields)
    item.refresh_from_db()
    return item


def _scope(tenant: Tenant) -> NightlyScope:
    return NightlyScope(project_id=tenant.project.id, owner_id=None)


def test_decay_uses_effectiveness_dependent_half_lives(tenant_a: Tenant, tenant_b: Tenant) -> None:
    plain = _row(tenant_a, "run the linter before every commit", days_unused=90)
    weak = _row(tenant_a, "mock the database in integration tests", days_unused=45, success_count=1, failure_count=9)
    strong = _row(tenant_a, "pin dependencies with a constraints file", days_unused=180, success_count=9,
                  failure_count=1)
    ancient = _row(tenant_a, "use tabs in the makefile recipes", days_unused=1000)
    decision = _row(tenant_a, "we deploy from the release branch", days_unused=1000, type="decision")
    other = _row(tenant_b, "bob's ancient rule about his own code", days_unused=1000)

    report = decay_scope_run(scope=_scope(tenant_a), as_of=AS_OF)
    values = {i.id: i for i in KnowledgeItem.objects.all()}
    for item in (plain, weak, strong):  # each sits exactly one half-life (90 / 45 / 180 days) from its last use
        assert values[item.id].decay_score == pytest.approx(math.exp(-1), abs=1e-6)
    assert values[ancient.id].decay_score == 0.05
    assert values[decision.id].decay_score == 1.0 and values[other.id].decay_score == 1.0
    assert values[weak.id].tags == ["low_effectiveness"] and values[strong.id].tags == []
    assert (report.rows, report.changed, report.retired, report.flagged) == (4, 4, 1, 1)
    assert decay_scope_run(scope=_scope(tenant_a), as_of=AS_OF).changed == 0  # rerun: same result


def test_decay_keeps_tags_written_while_it_ran(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """The run reads its rows, computes, then writes: a tag added in between (a reaffirmed rule's, an approved
    age-out's) stays, and the flag is added or removed on the tags as they are when written."""
    from knowledge.services.decay import decay_apply, decay_plan

    weak = _row(tenant_a, "mock the database in integration tests", days_unused=45, success_count=1, failure_count=9)
    healed = _row(tenant_a, "retry the flaky upload twice", days_unused=45, success_count=9, failure_count=1)
    KnowledgeItem.objects.filter(id=healed.id).update(tags=["low_effectiveness"])
    theirs = _row(tenant_b, "bob's weak rule", days_unused=45, success_count=1, failure_count=9)
    plan = decay_plan(scope=_scope(tenant_a), as_of=AS_OF)
    KnowledgeItem.objects.filter(id__in=[weak.id, healed.id]).update(tags=["aged_out"])  # written meanwhile
    decay_apply(plan)
    tags = dict(KnowledgeItem.objects.values_list("id", "tags"))
    assert tags[weak.id] == ["aged_out", "low_effectiveness"] and tags[healed.id] == ["aged_out"]
    assert tags[theirs.id] == [] and KnowledgeItem.objects.get(id=theirs.id).decay_score == 1.0


def test_a_pair_is_folded_once_whoever_meets_it_second(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Two runs (the nightly one and `brain jobs run evolution`, or a run and an approved merge) that both read the
    pair live: the second changes nothing, instead of adding the twin's counters to the survivor again."""
    from knowledge.services.evolution import merge_into

    survivor = _row(tenant_a, "run the linter before every commit", days_unused=1, success_count=3)
    twin = _row(tenant_a, "run the linter before each commit", days_unused=1, success_count=4, failure_count=1)
    KnowledgeItem.objects.filter(id=twin.id).update(tags=["ci"])
    theirs = _row(tenant_b, "run the linter before every commit", days_unused=1, success_count=2)
    stale_survivor, stale_twin = KnowledgeItem.objects.get(id=survivor.id), KnowledgeItem.objects.get(id=twin.id)
    assert merge_into(survivor, KnowledgeItem.objects.get(id=twin.id)) is True
    assert merge_into(stale_survivor, stale_twin) is False  # read live before the first fold, met after it
    kept = KnowledgeItem.objects.get(id=survivor.id)
    assert (kept.success_count, kept.failure_count, kept.tags) == (7, 1, ["ci"])
    assert KnowledgeItem.objects.get(id=twin.id).superseded_by_id == survivor.id
    assert KnowledgeItem.objects.get(id=theirs.id).success_count == 2


def test_fan_out_covers_every_scope(tenant_a: Tenant, tenant_b: Tenant) -> None:
    _row(tenant_a, "a project rule that has aged well", days_unused=90)
    personal = _row(tenant_b, "a personal rule that follows bob around", days_unused=1000, project=False)
    assert set(nightly_scopes()) == {f"project:{tenant_a.project.id}", f"owner:{tenant_b.user.id}"}
    app.conf.task_always_eager = True
    try:
        assert nightly_decay(as_of=AS_OF.isoformat()) == 2
    finally:
        app.conf.task_always_eager = False
    personal.refresh_from_db()
    assert personal.decay_score == 0.05


def test_evolution_merges_ages_flags_and_snapshots(tenant_a: Tenant, tenant_b: Tenant) -> None:
    older = _row(tenant_a, "Use pytest fixtures instead of setUp methods in tests.", days_unused=10,
                 success_count=3, source="user_correction")
    newer = _row(tenant_a, "Use pytest fixtures instead of setUp methods in the tests.", days_unused=5,
                 success_count=2, failure_count=1, source="discovery", tags=["close_capture"])
    stale = _row(tenant_a, "Use class-based views for every Django endpoint.", days_unused=200, framework="django")
    fresh = _row(tenant_a, "Use Django's select_related for foreign keys in list views.", days_unused=10,
                 framework="django")
    always = _row(tenant_a, "Always use Formik for forms in this repository.", days_unused=20, type="reflex")
    never = _row(tenant_a, "Never use Formik for forms in this repository.", days_unused=3, type="anti_principle")
    bobs = _row(tenant_b, "Use pytest fixtures instead of setUp methods in tests.", days_unused=1)

    report = evolution_scope_run(scope=_scope(tenant_a), as_of=AS_OF)
    assert (report.merged, report.aged, report.contradictions) == (1, 1, 1)
    rows = {i.id: i for i in KnowledgeItem.objects.all()}
    assert rows[newer.id].superseded_by_id == older.id and rows[older.id].superseded_by_id is None
    assert (rows[older.id].success_count, rows[older.id].failure_count) == (5, 1)
    assert {"close_capture", "source:discovery"} <= set(rows[older.id].tags)
    assert rows[stale.id].confidence == pytest.approx(0.35) and "aged_out" in rows[stale.id].tags
    assert rows[fresh.id].confidence == 0.7
    assert rows[bobs.id].superseded_by_id is None
    pair = Contradiction.objects.get()
    assert (pair.first_id, pair.second_id, pair.reason, pair.confirmed_by) == (
        always.id, never.id, "anti_principle", "heuristic")
    snapshot = HealthSnapshot.objects.get(project=tenant_a.project)
    assert (snapshot.active, snapshot.used_last_30_days, snapshot.contradictions) == (5, 4, 1)
    assert snapshot.average_confidence == pytest.approx((0.7 * 4 + 0.35) / 5)
    assert snapshot.median_age_days == pytest.approx(11.0)  # ages 4, 11, 11, 21, 201 days
    # Rerun of the same night: nothing merges, ages or is recorded twice.
    again = evolution_scope_run(scope=_scope(tenant_a), as_of=AS_OF)
    assert (again.merged, again.aged, again.contradictions) == (0, 0, 0)
    assert KnowledgeItem.objects.get(id=stale.id).confidence == pytest.approx(0.35)
    assert HealthSnapshot.objects.count() == 1 and not HealthSnapshot.objects.filter(project=tenant_b.project).exists()


def test_a_configured_model_must_confirm_a_contradiction(tenant_a: Tenant) -> None:
    _row(tenant_a, "Always use Formik for forms in this repository.", days_unused=20, type="reflex")
    _row(tenant_a, "Never use Formik for forms in this repository.", days_unused=3, type="anti_principle")
    llm = {**settings.BRAIN_LLM, "model": "gpt-4o-mini", "openai_api_key": "sk", "backoff_s": 0.0}
    with fake_llm_server(FakeLlm(reply='{"contradiction": false}')) as fake, \
            override_settings(BRAIN_LLM={**llm, "openai_base_url": fake.url}):
        assert evolution_scope_run(scope=_scope(tenant_a), as_of=AS_OF).contradictions == 0
        fake.reply = '```json\n{"contradiction": true}\n```'
        assert evolution_scope_run(scope=_scope(tenant_a), as_of=AS_OF).contradictions == 1
    assert Contradiction.objects.get().confirmed_by == "gpt-4o-mini"
