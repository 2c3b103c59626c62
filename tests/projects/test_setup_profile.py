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
    with pytest.raises(KeyError):
        setup_steps(client_id="cursor", os_id="linux", base_url="https://b.example", profile="other")


@pytest.mark.django_db
def test_setup_guide_switches_profile(client: Client, tenant_a: Tenant) -> None:
    client.force_login(tenant_a.user)
    page = client.get("/settings/setup?profile=cognibrain").content.decode()
    assert "http://testserver/mcp/cognibrain" in page and "?profile=brain" in page
    default = client.get("/settings/setup").content.decode()
    assert "http://testserver/mcp/cognibrain" not in default and "http://testserver/mcp" in default
    assert "?profile=cognibrain" in default
