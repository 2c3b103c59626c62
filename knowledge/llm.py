"""LLM providers for extraction and the oracle, routed by model name.

    qwen* / glm*  -> DashScope (OpenAI-compatible endpoint), DASHSCOPE_API_KEY
    claude*       -> Anthropic Messages API,                 ANTHROPIC_API_KEY
    anything else -> OpenAI chat completions (or any compatible server via OPENAI_BASE_URL), OPENAI_API_KEY
    heuristic     -> no model: callers use their deterministic path

One HTTP client (httpx) speaks both wire formats, with a timeout, retries on 429/5xx/network errors with
capped exponential backoff, and an error that names the exact variable to set when a key is missing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from brain.config import overridden
from brain.errors import BrainError
from brain.logs import log_op

logger = logging.getLogger(__name__)

HEURISTIC = "heuristic"
_RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}


class LlmUnavailable(BrainError):
    """The configured provider cannot be used (missing key, quota, or it kept failing)."""

    code = "LLM_UNAVAILABLE"
    http_status = 503


OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class LlmSettings:
    """The defaults; `BRAIN_LLM` in settings holds what the environment overrides (`llm_settings()`)."""

    model: str = ""  # KEA_MODEL; empty: the first provider with a key (`configured_model`), else heuristics
    openai_api_key: str = ""
    anthropic_api_key: str = ""
    dashscope_api_key: str = ""
    openai_base_url: str = OPENAI_BASE_URL
    anthropic_base_url: str = "https://api.anthropic.com"
    dashscope_base_url: str = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    timeout_s: float = 60.0
    max_attempts: int = 3
    backoff_s: float = 1.0  # doubled after each failed attempt, at most 8 s
    daily_quota: int = 200  # LLM extractions per user and UTC day (knowledge/services/quota.py)

    @property
    def openai_base_url_is_custom(self) -> bool:
        """Another OpenAI-compatible server (Ollama, vLLM): it needs no key."""
        return self.openai_base_url.rstrip("/") != OPENAI_BASE_URL

    def api_key(self, provider: str) -> str:
        return str(getattr(self, f"{provider}_api_key") or "")


def llm_settings() -> LlmSettings:
    """The code defaults above with the overrides the environment sets (`settings.BRAIN_LLM`)."""
    return overridden(LlmSettings(), settings.BRAIN_LLM)


@dataclass(frozen=True)
class Route:
    provider: str  # "dashscope" | "anthropic" | "openai"
    key_variable: str
    base_url: str


def route_for(model: str) -> Route:
    """The provider a model name belongs to (the spec's routing table)."""
    name, llm = model.lower(), llm_settings()
    if name.startswith(("qwen", "glm")):
        return Route("dashscope", "DASHSCOPE_API_KEY", llm.dashscope_base_url)
    if name.startswith("claude"):
        return Route("anthropic", "ANTHROPIC_API_KEY", llm.anthropic_base_url)
    return Route("openai", "OPENAI_API_KEY", llm.openai_base_url)


def configured_model() -> str:
    """KEA_MODEL when set; otherwise the first provider with a key; otherwise the heuristic mode."""
    llm = llm_settings()
    if llm.model:
        return llm.model
    for provider, default_model in (("openai", "gpt-4o-mini"), ("anthropic", "claude-3-5-haiku-latest"),
                                    ("dashscope", "qwen3-coder")):
        if llm.api_key(provider):
            return default_model
    return HEURISTIC


def _api_key(route: Route) -> str:
    llm = llm_settings()
    key = llm.api_key(route.provider)
    if key:
        return key
    # A local OpenAI-compatible server (Ollama, vLLM) needs no key.
    if route.provider == "openai" and llm.openai_base_url_is_custom:
        return "not-needed"
    others = [v for v in ("DASHSCOPE_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY") if v != route.key_variable]
    raise LlmUnavailable(
        f"model routes to {route.provider}: set {route.key_variable}, or pick a model served by "
        f"{others[0]} / {others[1]} via KEA_MODEL"
    )


Request = tuple[str, dict[str, str], dict[str, Any]]


def _request(route: Route, model: str, system: str, prompt: str, max_tokens: int) -> Request:
    key = _api_key(route)
    if route.provider == "anthropic":
        body: dict[str, Any] = {
            "model": model, "max_tokens": max_tokens, "system": system,
            "messages": [{"role": "user", "content": prompt}],
        }
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        return f"{route.base_url.rstrip('/')}/v1/messages", headers, body
    body = {
        "model": model, "max_tokens": max_tokens, "temperature": 0,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
    }
    return f"{route.base_url.rstrip('/')}/chat/completions", {"Authorization": f"Bearer {key}"}, body


def _text_of(provider: str, data: dict[str, Any]) -> str:
    if provider == "anthropic":
        return "".join(part.get("text", "") for part in data.get("content", []) if part.get("type") == "text")
    choices = data.get("choices") or [{}]
    return str((choices[0].get("message") or {}).get("content") or "")


def complete(*, system: str, prompt: str, model: str | None = None, max_tokens: int = 1024,
             timeout_s: float | None = None, max_attempts: int | None = None) -> str:
    """One completion from the routed provider; raises LlmUnavailable after the retries are spent.
    `timeout_s` / `max_attempts` shorten the configured ones for a caller that someone is waiting on."""
    model = model or configured_model()
    if model == HEURISTIC:
        raise LlmUnavailable("no LLM is configured (heuristic mode); set KEA_MODEL and its provider key")
    route = route_for(model)
    url, headers, body = _request(route, model, system, prompt, max_tokens)
    llm = llm_settings()
    attempts, delay = min(max_attempts or llm.max_attempts, llm.max_attempts), llm.backoff_s
    timeout = min(timeout_s or llm.timeout_s, llm.timeout_s)
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            response = httpx.post(url, json=body, headers=headers, timeout=timeout)
            if response.status_code not in _RETRY_STATUSES:
                response.raise_for_status()
                text = _text_of(route.provider, response.json())
                log_op(logger, "llm.call", provider=route.provider, model=model, attempt=attempt,
                       durMs=round((time.monotonic() - started) * 1000), outcome="ok")
                return text
            reason = f"HTTP {response.status_code}"
        except httpx.HTTPStatusError as exc:
            raise LlmUnavailable(f"{route.provider} refused the request: HTTP {exc.response.status_code}") from exc
        except (httpx.TransportError, ValueError) as exc:
            reason = type(exc).__name__
        if attempt < attempts:
            time.sleep(min(delay * 2 ** (attempt - 1), 8.0))
    log_op(logger, "llm.call", provider=route.provider, model=model, attempt=attempts, outcome="error", reason=reason)
    raise LlmUnavailable(f"{route.provider} failed {attempts} times (last: {reason})")
