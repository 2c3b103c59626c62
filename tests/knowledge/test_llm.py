"""Provider routing and wire formats, against a local fake server (no network)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from knowledge.llm import HEURISTIC, LlmUnavailable, complete, configured_model, route_for
from tests.support.fake_llm import FakeLlm, fake_llm_server


def _llm(**changes: Any) -> dict[str, Any]:
    base = {**settings.BRAIN_LLM, "model": "", "openai_api_key": "", "anthropic_api_key": "",
            "dashscope_api_key": "", "backoff_s": 0.0}
    return {**base, **changes}


@pytest.fixture
def fake() -> Iterator[FakeLlm]:
    with fake_llm_server(FakeLlm(reply="a rule")) as server:
        yield server


@pytest.mark.parametrize(
    ("model", "provider"),
    [("qwen3-coder", "dashscope"), ("GLM-4.6", "dashscope"), ("claude-sonnet-4", "anthropic"),
     ("gpt-4o-mini", "openai"), ("llama3.1", "openai")],
)
def test_routing_by_model_name(model: str, provider: str) -> None:
    assert route_for(model).provider == provider


def test_no_key_means_heuristic_mode() -> None:
    with override_settings(BRAIN_LLM=_llm()):
        assert configured_model() == HEURISTIC
        with pytest.raises(LlmUnavailable, match="heuristic"):
            complete(system="s", prompt="p")


def test_missing_key_names_the_variable_and_the_alternatives() -> None:
    with override_settings(BRAIN_LLM=_llm(model="qwen3-coder")), pytest.raises(LlmUnavailable) as info:
        complete(system="s", prompt="p")
    message = str(info.value)
    assert "set DASHSCOPE_API_KEY" in message
    assert "ANTHROPIC_API_KEY" in message and "OPENAI_API_KEY" in message


def test_openai_wire_format(fake: FakeLlm) -> None:
    with override_settings(BRAIN_LLM=_llm(model="gpt-4o-mini", openai_api_key="sk-test",
                                          openai_base_url=f"{fake.url}/v1")):
        assert complete(system="be brief", prompt="hello") == "a rule"
    request = fake.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"]["messages"][0] == {"role": "system", "content": "be brief"}


def test_anthropic_wire_format(fake: FakeLlm) -> None:
    with override_settings(BRAIN_LLM=_llm(model="claude-3-5-haiku-latest", anthropic_api_key="ak",
                                          anthropic_base_url=fake.url)):
        assert complete(system="sys", prompt="hello", max_tokens=50) == "a rule"
    request = fake.requests[0]
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "ak" and request["headers"]["anthropic-version"]
    assert request["body"]["system"] == "sys" and request["body"]["max_tokens"] == 50


def test_local_compatible_server_needs_no_key(fake: FakeLlm) -> None:
    with override_settings(BRAIN_LLM=_llm(model="llama3.1", openai_base_url=fake.url)):
        assert complete(system="s", prompt="p") == "a rule"


def test_retries_then_succeeds(fake: FakeLlm) -> None:
    fake.fail_first = 2
    with override_settings(BRAIN_LLM=_llm(model="qwen3-coder", dashscope_api_key="k",
                                          dashscope_base_url=fake.url, max_attempts=3)):
        assert complete(system="s", prompt="p") == "a rule"
    assert len(fake.requests) == 3


def test_gives_up_after_the_cap(fake: FakeLlm) -> None:
    fake.fail_first = 10
    with override_settings(BRAIN_LLM=_llm(model="gpt-4o", openai_api_key="k", openai_base_url=fake.url,
                                          max_attempts=2)), pytest.raises(LlmUnavailable, match="failed 2 times"):
        complete(system="s", prompt="p")
    assert len(fake.requests) == 2


def test_client_error_is_not_retried(fake: FakeLlm) -> None:
    fake.status = 401
    with override_settings(BRAIN_LLM=_llm(model="gpt-4o", openai_api_key="bad", openai_base_url=fake.url)), \
            pytest.raises(LlmUnavailable, match="HTTP 401"):
        complete(system="s", prompt="p")
    assert len(fake.requests) == 1
