"""KEA extraction: heuristic mining, refine mode, quality filter, dedup, LLM paths, quota, funnel log."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from knowledge.models import KnowledgeItem, LlmUsage
from sessions.models import JobStatus, SessionJob
from sessions.services.extraction import extract_work
from sessions.services.jobs import session_job_run
from tests.conftest import Tenant
from tests.support.closed_session import closed_session
from tests.support.fake_llm import FakeLlm, fake_llm_server

CORRECTION = "No. Never use Formik in this repo, we use react-hook-form with zod for every form."
pytestmark = pytest.mark.django_db


def _llm(**changes: Any) -> dict[str, Any]:
    base = {**settings.BRAIN_LLM, "model": "", "openai_api_key": "", "anthropic_api_key": "",
            "dashscope_api_key": "", "backoff_s": 0.0, "max_attempts": 1,
            "timeout_s": 2.0}
    return {**base, **changes}


@pytest.fixture(autouse=True)
def heuristic_mode() -> Iterator[None]:
    with override_settings(BRAIN_LLM=_llm()):
        yield


def _funnel(caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    lines = [r.op_fields for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "kea.funnel"]
    assert lines, "no kea.funnel line"
    return dict(lines[-1])


def test_heuristic_mine_learns_from_corrections_and_rejected_files(
    tenant_a: Tenant, tenant_b: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project, events=[
        ("user_correction", CORRECTION, {}),
        ("file_rejected", "", {"path": "settings/prod.py", "reason": "production settings are owned by ops"}),
        ("note", "Always remember the weather.", {}),  # not a correction: ignored
    ])
    with caplog.at_level(logging.INFO):
        assert session_job_run(session_id=str(session.id), name="extract", work=extract_work) == "ok"
    rows = list(KnowledgeItem.objects.filter(owner=tenant_a.user).order_by("content"))
    assert [r.type for r in rows] == ["anti_principle", "anti_principle"]
    assert rows[0].content.startswith("Do not change settings/prod.py") and "owned by ops" in rows[0].content
    assert rows[1].content == "Never use Formik in this repo, we use react-hook-form with zod for every form."
    # A learned row belongs to its session's project and remembers the session (issue 15: no project-less leaks).
    assert all(r.project_id == session.project_id and r.source_session_id == session.id and r.confidence >= 0.7
               and len(r.trigger) >= 10 for r in rows)
    assert all(r.embedding is not None for r in rows)
    assert _funnel(caplog) | {"sessionId": ""} == {
        "op": "kea.funnel", "sessionId": "", "mode": "mine", "model": "heuristic", "submitted": 0,
        "llmFindings": 2, "filterPassed": 2, "persisted": 2, "merged": 0}
    job = SessionJob.objects.get(session=session, name="extract")
    assert (job.status, job.items, job.attempts) == (JobStatus.DONE, 2, 1)
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
    # A second delivery of the same job does nothing.
    assert session_job_run(session_id=str(session.id), name="extract", work=extract_work) == "skipped_already_done"
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 2


def test_same_correction_in_a_later_session_reinforces_instead_of_duplicating(tenant_a: Tenant) -> None:
    first = closed_session(user=tenant_a.user, project=tenant_a.project, events=[("user_correction", CORRECTION, {})])
    extract_work(first, None)
    row = KnowledgeItem.objects.get(owner=tenant_a.user)
    second = closed_session(user=tenant_a.user, project=tenant_a.project, prompt="build the signup page",
                            events=[("user_correction", "never use Formik in this repo; we use react-hook-form "
                                     "with zod for all forms", {})])
    assert extract_work(second, None) == 0
    bumped = KnowledgeItem.objects.get(owner=tenant_a.user)
    assert bumped.id == row.id
    assert (bumped.confidence, bumped.success_count) == (pytest.approx(row.confidence + 0.02), row.success_count + 1)


def test_quality_filter_drops_short_and_generic_rules(tenant_a: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project, events=[
        ("user_correction", "Never do that.", {}),
        ("user_correction", "Always write clean code.", {}),
    ])
    with caplog.at_level(logging.INFO):
        assert extract_work(session, None) == 0
    funnel = _funnel(caplog)
    assert (funnel["llmFindings"], funnel["filterPassed"], funnel["persisted"]) == (2, 0, 0)
    assert not KnowledgeItem.objects.exists()


def _learning(rule: str, **extra: Any) -> tuple[str, str, dict[str, Any]]:
    payload = {"trigger": "when scaffolding a form in this repo", "rule": rule, "rationale": "team standard",
               "type": "reflex", "source": "discovery", "confidence": 0.99, **extra}
    return ("learning_captured", rule, payload)


def test_refine_mode_judges_learnings_and_routes_decisions(
    tenant_a: Tenant, tenant_b: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    session = closed_session(user=tenant_a.user, project=tenant_a.project, events=[
        ("user_correction", CORRECTION, {}),  # refine mode does not mine
        _learning("use react-hook-form with zod schemas for form validation"),
        _learning("skip the flaky checkout test for now until the fix lands"),
        _learning("all services talk to Postgres through the repository layer", source="decision",
                  type="principle", confidence=1.0),
    ])
    with caplog.at_level(logging.INFO):
        assert extract_work(session, None) == 2
    kept = KnowledgeItem.objects.get(owner=tenant_a.user, type="reflex")
    assert (kept.confidence, kept.tags, kept.project_id) == (0.95, ["close_capture"], session.project_id)
    decision = KnowledgeItem.objects.get(owner=tenant_a.user, type="decision")
    assert decision.project_id == tenant_a.project.id and decision.tags == ["close_capture", "decision"]
    assert decision.source == "decision"
    funnel = _funnel(caplog)
    assert (funnel["mode"], funnel["submitted"], funnel["filterPassed"], funnel["persisted"]) == ("refine", 3, 2, 2)
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


_FINDINGS = [
    {"type": "recipe", "trigger": "when adding a Django model field",
     "rule": "run makemigrations and commit the migration with the model change",
     "rationale": "CI checks for missing migrations", "confidence": 0.9},
    {"type": "heuristic", "trigger": "when unsure", "rule": "be careful", "rationale": "", "confidence": 0.9},
    {"type": "reflex", "trigger": "when naming tests", "rule": "name test files test_<module>.py under tests/<app>",
     "rationale": "", "confidence": 0.5},
]
FENCED = "Here you go:\n```json\n" + json.dumps({"findings": _FINDINGS}, indent=1) + "\n```"


def test_llm_mine_reads_fenced_json_and_charges_the_quota(tenant_a: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    with fake_llm_server(FakeLlm(reply=FENCED)) as fake, override_settings(BRAIN_LLM=_llm(
        model="gpt-4o-mini", openai_api_key="sk-test", openai_base_url=f"{fake.url}/v1", daily_quota=1,
    )):
        first = closed_session(user=tenant_a.user, project=tenant_a.project)
        with caplog.at_level(logging.INFO):
            assert extract_work(first, None) == 1
        assert _funnel(caplog)["model"] == "gpt-4o-mini"
        assert "add a login form" in fake.requests[0]["body"]["messages"][1]["content"]
        # The quota (1 a day) is spent: the next session uses the heuristic path and no request is made.
        second = closed_session(user=tenant_a.user, project=tenant_a.project,
                                events=[("user_correction", CORRECTION, {})])
        assert extract_work(second, None) == 1
        assert len(fake.requests) == 1
    assert LlmUsage.objects.get(user=tenant_a.user).count == 1
    assert KnowledgeItem.objects.filter(owner=tenant_a.user, type="recipe").count() == 1


@pytest.mark.parametrize(("reply", "status", "delay"), [
    ("I could not find anything useful, sorry.", 200, 0.0),  # malformed: no JSON at all
    ("", 429, 0.0),                                           # rate limited on every attempt
    (FENCED, 200, 1.0),                                       # answers after the 0.3 s timeout
])
def test_malformed_reply_rate_limit_or_timeout_falls_back_to_heuristics(
    tenant_a: Tenant, reply: str, status: int, delay: float, caplog: pytest.LogCaptureFixture
) -> None:
    with fake_llm_server(FakeLlm(reply=reply, status=status, delay_s=delay)) as fake, override_settings(
        BRAIN_LLM=_llm(model="claude-3-5-haiku-latest", anthropic_api_key="ak", anthropic_base_url=fake.url,
                       timeout_s=0.3),
    ):
        session = closed_session(user=tenant_a.user, project=tenant_a.project,
                                 events=[("user_correction", CORRECTION, {})])
        with caplog.at_level(logging.INFO):
            assert extract_work(session, None) == 1
    assert fake.requests and fake.requests[0]["path"] == "/v1/messages"
    assert any(getattr(r, "op_fields", {}).get("op") == "kea.llm_fallback" for r in caplog.records)
    assert _funnel(caplog)["model"] == "heuristic"


def test_llm_judge_may_lower_confidence_but_decisions_skip_it(tenant_a: Tenant) -> None:
    verdicts = '{"verdicts": [{"index": 0, "keep": true, "confidence": 0.75}, {"index": 1, "keep": false}]}'
    with fake_llm_server(FakeLlm(reply=verdicts)) as fake, override_settings(BRAIN_LLM=_llm(
        model="qwen3-coder", dashscope_api_key="dk", dashscope_base_url=fake.url,
    )):
        session = closed_session(user=tenant_a.user, project=tenant_a.project, events=[
            _learning("use react-hook-form with zod schemas for form validation"),
            _learning("prefer tabs over spaces in the generated YAML fixtures"),
            _learning("deploys happen only from the release branch after QA", source="decision"),
        ])
        assert extract_work(session, None) == 2
    prompt = fake.requests[0]["body"]["messages"][1]["content"]
    assert "release branch" not in prompt  # the decision never reached the judge
    assert KnowledgeItem.objects.get(owner=tenant_a.user, type="reflex").confidence == 0.75
    decision = KnowledgeItem.objects.get(owner=tenant_a.user, type="decision")
    assert decision.confidence == 0.95  # sent at 0.99: the refine cap holds for decisions too
