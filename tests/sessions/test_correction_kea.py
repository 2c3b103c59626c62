"""cognibrain_correction's "not X, use Y" with the KEA model set: a local server speaking the OpenAI and
Anthropic wire formats answers the strict JSON; any failure, slowness or other shape falls back to heuristics."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from knowledge.models import KnowledgeItem, KnowledgeType
from sessions.services.cognibrain import correction_record
from sessions.services.current import session_current
from sessions.services.policy import correction_parse
from tests.conftest import Tenant
from tests.support.fake_llm import FakeLlm, fake_llm_server

pytestmark = pytest.mark.django_db
FREE_FORM = "Stop reaching for moment.js whenever dates come up; in this repo dayjs is what we ship."
NOT_X_USE_Y = "Use npm test, not pnpm test"
DERIVED = json.dumps({"forbidden_action": "moment.js", "procedure": "dayjs"})


def _llm(**changes: Any) -> dict[str, Any]:
    base = {**settings.BRAIN_LLM, "model": "", "openai_api_key": "", "anthropic_api_key": "",
            "dashscope_api_key": "", "backoff_s": 0.0, "max_attempts": 3, "timeout_s": 2.0}
    return {**base, **changes}


@pytest.fixture(autouse=True)
def heuristic_mode() -> Iterator[None]:
    with override_settings(BRAIN_LLM=_llm()):
        yield


def _contents(tenant: Tenant) -> set[str]:
    return set(KnowledgeItem.objects.filter(owner=tenant.user).values_list("content", flat=True))


def _op(caplog: pytest.LogCaptureFixture, op: str) -> list[dict[str, Any]]:
    return [r.op_fields for r in caplog.records if getattr(r, "op_fields", {}).get("op") == op]


def test_the_model_derives_what_heuristics_cannot(tenant_a: Tenant, tenant_b: Tenant,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    assert correction_parse(FREE_FORM) is None  # beyond the heuristics: only the model finds the pair
    with fake_llm_server(FakeLlm(reply=f"```json\n{DERIVED}\n```")) as fake, override_settings(
            BRAIN_LLM=_llm(model="gpt-4o-mini", openai_base_url=fake.url)), caplog.at_level(logging.INFO):
        done = correction_record(session=session_current(principal=tenant_a.principal, repo="acme/web"),
                                 text=FREE_FORM)
    request = fake.requests[0]
    assert request["path"] == "/chat/completions" and request["body"]["messages"][1]["content"] == FREE_FORM
    assert "forbidden_action" in request["body"]["messages"][0]["content"]
    assert {(r.type, r.content) for r in done.stored} == {
        (KnowledgeType.ANTI_PRINCIPLE, "Do not use moment.js; use dayjs instead."),
        (KnowledgeType.RECIPE, "Use dayjs (not moment.js).")}
    assert _op(caplog, "cognibrain.correction")[0]["derivedBy"] == "gpt-4o-mini"
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


@pytest.mark.parametrize(("reply", "status", "delay"), [
    ("Sure! The agent should use npm test.", 200, 0.0),                     # no JSON at all
    ('{"forbidden": "pnpm test", "use": "npm test"}', 200, 0.0),            # other keys: not the strict answer
    ('{"forbidden_action": "pnpm test", "procedure": ""}', 200, 0.0),       # an empty part
    ("", 503, 0.0),                                                          # the provider is down
    (json.dumps({"forbidden_action": "x", "procedure": "y"}), 200, 1.5),     # answers after the 0.3 s timeout
])
def test_any_model_failure_falls_back_to_heuristics(tenant_a: Tenant, tenant_b: Tenant, reply: str, status: int,
                                                    delay: float, caplog: pytest.LogCaptureFixture) -> None:
    with fake_llm_server(FakeLlm(reply=reply, status=status, delay_s=delay)) as fake, override_settings(
            BRAIN_LLM=_llm(model="claude-3-5-haiku-latest", anthropic_api_key="ak", anthropic_base_url=fake.url,
                           timeout_s=0.3)), caplog.at_level(logging.INFO):
        correction_record(session=session_current(principal=tenant_a.principal, repo="acme/web"), text=NOT_X_USE_Y)
    assert len(fake.requests) == 1 and fake.requests[0]["path"] == "/v1/messages"  # one short attempt only
    assert _op(caplog, "cognibrain.correction_fallback")
    assert _op(caplog, "cognibrain.correction")[0]["derivedBy"] == "heuristic"
    assert {"Do not use pnpm test; use npm test instead.", "Use npm test (not pnpm test)."} <= _contents(tenant_a)
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_without_a_model_heuristics_derive_and_nothing_is_called(tenant_a: Tenant) -> None:
    with fake_llm_server() as fake:
        done = correction_record(session=session_current(principal=tenant_a.principal), text=NOT_X_USE_Y)
    assert not fake.requests
    assert "Use npm test (not pnpm test)." in {r.content for r in done.stored}
