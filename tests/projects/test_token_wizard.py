"""/settings/tokens: mint (raw shown once, with set-up), list, revoke; the other tenant sees nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from projects.models import ApiToken
from projects.selectors.accounts import token_for_raw
from tests.conftest import Tenant


def _client(tenant: Tenant) -> Client:
    client = Client()
    client.force_login(tenant.user)
    return client


@pytest.mark.django_db
def test_mint_shows_raw_token_once_with_setup_for_every_client(tenant_a: Tenant) -> None:
    client = _client(tenant_a)
    response = client.post("/settings/tokens", {"label": "desk", "scope": "user", "expires_in_days": "30"}, follow=True)
    assert response.redirect_chain == [("/settings/tokens?profile=brain", 302)]  # a reload mints nothing more
    assert response.status_code == 200 and response["Cache-Control"].startswith("max-age=0")
    html = response.content.decode()
    raw = re.search(r'<code id="raw-token">(ebt_[^<]+)</code>', html)
    assert raw is not None and token_for_raw(raw=raw.group(1)) is not None
    assert 'claude mcp add --transport http --scope user brain http://testserver/mcp' in html
    for name in ("Cursor", "Windsurf", "VS Code with GitHub Copilot", "Codex CLI", "Gemini CLI", "npx mcp-remote"):
        assert name in html
    assert "curl -fsSL http://testserver/api/onboard.sh | bash -s -- --client claude-code" in html
    # the same token, for the Cognibrain tools: its own panels, endpoint, server entry and installer flag
    assert 'claude mcp add --transport http --scope user cognibrain http://testserver/mcp/cognibrain' in html
    assert "bash -s -- --client claude-code --profile cognibrain" in html
    assert '<option value="brain" selected>' in html
    later = client.get("/settings/tokens?profile=brain").content.decode()  # the reload: shown once, nothing minted
    assert raw.group(1) not in later and "desk" in later and raw.group(1)[:12] in later
    assert ApiToken.objects.filter(user=tenant_a.user, label="desk").count() == 1


@pytest.mark.django_db
def test_project_scope_offers_only_visible_projects(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = _client(tenant_a)
    page = client.get("/settings/tokens").content.decode()
    assert tenant_a.project.name in page and tenant_b.project.name not in page
    before = ApiToken.objects.count()
    response = client.post("/settings/tokens", {"label": "x", "scope": str(tenant_b.project.pk)})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert ApiToken.objects.count() == before
    response = client.post("/settings/tokens", {"label": "ci-new", "scope": str(tenant_a.project.pk)})
    assert response.status_code == 302
    assert ApiToken.objects.get(label="ci-new", user=tenant_a.user, revoked_at=None, project=tenant_a.project)


@pytest.mark.django_db
def test_revoke_is_immediate_and_only_for_the_owner(tenant_a: Tenant, tenant_b: Tenant) -> None:
    _client(tenant_b).post(f"/settings/tokens/{tenant_a.user_token.pk}/revoke")
    assert token_for_raw(raw=tenant_a.user_raw) is not None
    assert tenant_a.user_token.prefix not in _client(tenant_b).get("/settings/tokens").content.decode()
    _client(tenant_a).post(f"/settings/tokens/{tenant_a.user_token.pk}/revoke")
    assert token_for_raw(raw=tenant_a.user_raw) is None
    assert token_for_raw(raw=tenant_b.user_raw) is not None


@pytest.mark.django_db
def test_tokens_page_needs_sign_in() -> None:
    assert Client().get("/settings/tokens")["Location"] == "/accounts/login/?next=/settings/tokens"


@pytest.mark.django_db
def test_a_configured_public_url_beats_a_hostile_host_header(settings: Any, tenant_a: Tenant) -> None:
    """Commands someone pastes into a terminal name BRAIN_PUBLIC_URL, never the Host a client sent."""
    settings.PUBLIC_URL, settings.PUBLIC_URL_CONFIGURED = "https://brain.example.com/", True
    settings.ALLOWED_HOSTS = ["*"]  # a misconfigured or permissive host check: the Host header reaches the view
    client, evil = _client(tenant_a), {"HTTP_HOST": "evil.example"}
    minted = client.post("/settings/tokens", {"label": "desk", "scope": "user"}, follow=True, **evil).content.decode()
    guide = client.get("/settings/setup", **evil).content.decode()
    for page in (minted, guide):
        assert "claude mcp add --transport http --scope user brain https://brain.example.com/mcp" in page
        assert "curl -fsSL https://brain.example.com/api/onboard.sh | bash" in page
        assert "evil.example" not in page
    for script in ("/api/onboard.sh", "/api/onboard.ps1"):
        body = Client().get(script, **evil).content.decode()
        assert "https://brain.example.com" in body and "evil.example" not in body
    # Not configured (a laptop or LAN install): the address the page was browsed to, as before.
    settings.PUBLIC_URL_CONFIGURED = False
    lan = client.get("/settings/setup", HTTP_HOST="192.168.1.20:8000").content.decode()
    assert "http://192.168.1.20:8000/mcp" in lan
