"""The set-up wizard offers both tool profiles: /mcp (brain) and /mcp/cognibrain (Cognibrain)."""

from __future__ import annotations

import pytest
from django.test import Client

from projects.clients import CLIENTS, OSES, setup_steps
from tests.conftest import Tenant


def _text(client_id: str, profile: str) -> str:
    return "\n".join(s.body for s in setup_steps(client_id=client_id, os_id="linux", base_url="https://b.example",
                                                 profile=profile))


def test_every_client_gets_the_profiles_endpoint() -> None:
    for client_id in CLIENTS:
        for os_id in OSES:
            setup_steps(client_id=client_id, os_id=os_id, base_url="https://b.example", profile="cognibrain")
    assert "https://b.example/mcp/cognibrain" in _text("cursor", "cognibrain")
    assert "/mcp/cognibrain" not in _text("cursor", "brain") and "https://b.example/mcp" in _text("cursor", "brain")
    assert "--profile" in _text("stdio", "cognibrain")
    assert "--profile" not in _text("stdio", "brain")
    # one server entry per profile, so both fit side by side in one client's config
    assert '"cognibrain": {' in _text("cursor", "cognibrain") and '"brain": {' not in _text("cursor", "cognibrain")
    assert "--scope user cognibrain https://b.example/mcp/cognibrain" in _text("claude-code", "cognibrain")
    assert "[mcp_servers.cognibrain]" in _text("codex", "cognibrain")
    # the installer configures either profile
    assert "onboard.sh | bash -s -- --client cursor --profile cognibrain" in _text("cursor", "cognibrain")
    assert "--client cursor\n" in _text("cursor", "brain") + "\n" and "--profile" not in _text("cursor", "brain")
    windows = setup_steps(client_id="gemini", os_id="windows", base_url="https://b.example", profile="cognibrain")
    assert windows[-1].body.endswith("-Client gemini -Profile cognibrain\n")
    with pytest.raises(KeyError):
        setup_steps(client_id="cursor", os_id="linux", base_url="https://b.example", profile="other")


@pytest.mark.django_db
def test_setup_guide_offers_both_profiles(client: Client, tenant_a: Tenant) -> None:
    client.force_login(tenant_a.user)
    default = client.get("/settings/setup").content.decode()
    assert '<option value="brain" selected>' in default and '<option value="cognibrain">' in default
    assert 'data-profile="cognibrain"' in default and 'data-profile="brain"' in default
    assert "http://testserver/mcp/cognibrain" in default and "--scope user brain http://testserver/mcp " in default
    chosen = client.get("/settings/setup?profile=cognibrain").content.decode()
    assert '<option value="cognibrain" selected>' in chosen
    unknown = client.get("/settings/setup?profile=<x>").content.decode()
    assert '<option value="brain" selected>' in unknown and "&lt;x&gt;" not in unknown
