"""Production settings: the Content-Security-Policy on every page, and the warning about console mail."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import Client

from tests.conftest import Tenant

CONSOLE = "django.core.mail.backends.console.EmailBackend"
SMTP = "django.core.mail.backends.smtp.EmailBackend"


def csp_nonce(response: Any) -> str:
    policy = response["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in policy and "frame-ancestors 'none'" in policy
    assert "object-src 'none'" in policy and "unsafe-eval" not in policy
    match = re.search(r"'nonce-([^']+)'", policy)
    assert match is not None
    return match.group(1)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/accounts/signup/", "/admin/login/"])
def test_every_page_carries_a_policy(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 200
    csp_nonce(response)


@pytest.mark.django_db
def test_inline_scripts_carry_this_responses_nonce(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = Client()
    client.force_login(tenant_a.user)
    nonces = []
    for path in ("/settings/tokens", "/settings/setup"):  # the pages with inline scripts (the set-up wizard's)
        response = client.get(path, follow=True)
        assert response.status_code == 200, path
        nonce = csp_nonce(response)
        scripts = re.findall(r"<script([^>]*)>", response.content.decode())
        assert scripts and all(f'nonce="{nonce}"' in attrs for attrs in scripts), (path, scripts)
        nonces.append(nonce)
    assert len(set(nonces)) == 2  # a fresh nonce per response
    # The other tenant's dashboard pages are as protected (and show nothing of tenant A).
    other = Client()
    other.force_login(tenant_b.user)
    response = other.get(f"/dashboard/{tenant_a.project.id}/")
    assert response.status_code == 404


@pytest.mark.django_db
def test_json_answers_and_the_api_docs_carry_no_policy(tenant_a: Tenant) -> None:
    api = Client(HTTP_AUTHORIZATION=f"Bearer {tenant_a.user_raw}")
    assert "Content-Security-Policy" not in api.get("/api/v1/projects")
    docs = Client().get("/api/v1/docs")  # Swagger UI from its CDN: a policy would blank the page
    assert docs.status_code == 200 and "Content-Security-Policy" not in docs


def _mail_warnings() -> list[str]:
    return [m.id for m in run_checks() if m.id == "brain.W001"]


@pytest.mark.parametrize(("backend", "debug", "public_url", "proxy", "warned"), [
    (CONSOLE, False, "https://brain.example.com", None, True),  # public https URL
    (CONSOLE, False, "http://10.0.0.4:8000", ("HTTP_X_FORWARDED_PROTO", "https"), True),  # behind a TLS proxy
    (CONSOLE, False, "http://127.0.0.1:8000", None, False),  # a laptop
    (CONSOLE, True, "https://brain.example.com", None, False),  # debugging
    (SMTP, False, "https://brain.example.com", ("HTTP_X_FORWARDED_PROTO", "https"), False),  # configured
])
def test_console_mail_in_a_production_setup_warns(settings: Any, backend: str, debug: bool, public_url: str,
                                                  proxy: Any, warned: bool) -> None:
    settings.EMAIL_BACKEND, settings.DEBUG, settings.PUBLIC_URL = backend, debug, public_url
    settings.SECURE_PROXY_SSL_HEADER = proxy
    assert _mail_warnings() == (["brain.W001"] if warned else [])


def test_a_production_setup_without_redis_is_told_its_rate_limits_are_off(settings: Any) -> None:
    settings.DEBUG, settings.PUBLIC_URL, settings.EMAIL_BACKEND = False, "https://brain.example.com", SMTP
    settings.RATE_LIMIT_REDIS_URL = ""
    assert [m.id for m in run_checks() if m.id.startswith("brain.")] == ["brain.W002"]
    settings.RATE_LIMIT_REDIS_URL = "redis://127.0.0.1:6379/0"
    assert [m.id for m in run_checks() if m.id.startswith("brain.")] == []


@pytest.mark.parametrize(("public_url", "warned"), [
    ("http://0.0.0.0:8000", True), ("http://[::]:8000", True), ("not a url", True),
    ("http://127.0.0.1:8000", False), ("http://192.168.1.20:8000", False), ("https://brain.example.com", False),
])
def test_a_public_url_nobody_can_open_is_flagged(settings: Any, public_url: str, warned: bool) -> None:
    settings.PUBLIC_URL = public_url
    assert [m.id for m in run_checks() if m.id == "brain.W003"] == (["brain.W003"] if warned else [])
