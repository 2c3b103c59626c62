"""An account opened under somebody else's address: when the address's owner takes it over with a password reset
by mail, whatever the squatter minted stops working, through the real sign-up, reset and /mcp views."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client

from projects.models import ApiToken, AuditEvent, User
from projects.services.accounts import token_create
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp

VICTIM = "dana@corp.example"
NEW_PASSWORD = "the owner's own long pass 31"


def _lists_projects(raw: str) -> bool:
    response = Mcp(Client(), raw).modern("tools/call", {"name": "brain_list_projects", "arguments": {}})
    return response.status_code == 200 and "result" in response.json()


def _reset_by_mail(email: str) -> Any:
    """The owner asks for a reset, follows the mailed link and sets a password; returns the final page."""
    mail.outbox.clear()
    assert Client().post("/accounts/password/reset/", {"email": email}).status_code == 302
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/\S+)", mail.outbox[-1].body)
    assert link is not None
    client = Client()
    form_page = client.get(link.group(1), follow=True)
    return client.post(form_page.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD,
                                                         "new_password2": NEW_PASSWORD}, follow=True)


def _squat(email: str) -> tuple[User, str]:
    """Someone else signs up with the address (no verification) and mints a token for their agent."""
    response = Client().post("/accounts/signup/", {"email": email, "password": "the squatter's pass 12"})
    assert response.status_code == 302
    user = User.objects.get(email=email)
    assert user.email_confirmed_at is None
    return user, token_create(user=user, label="squatter's agent")[1]


@pytest.mark.django_db
def test_the_owners_reset_revokes_what_the_squatter_minted(settings: Any, tenant_b: Tenant) -> None:
    settings.SIGNUP_VERIFY_EMAIL = False
    user, squatter_raw = _squat(VICTIM)
    assert _lists_projects(squatter_raw)

    page = _reset_by_mail(VICTIM)

    assert page.status_code == 200 and "1 API token(s) minted before it was confirmed were revoked" in (
        page.content.decode())
    assert not _lists_projects(squatter_raw)
    user.refresh_from_db()
    assert user.email_confirmed_at is not None and user.check_password(NEW_PASSWORD)
    assert ApiToken.objects.get(user=user).revoked_at is not None
    audit = AuditEvent.objects.filter(actor=user, action="token.revoked").values_list("summary", flat=True)
    assert list(audit) == ["minted before the address was confirmed by mail"]
    # The other tenant is untouched: its tokens answer, none of its rows were revoked or audited.
    assert _lists_projects(tenant_b.user_raw) and _lists_projects(tenant_b.project_raw)
    assert not ApiToken.objects.filter(user=tenant_b.user, revoked_at__isnull=False).exists()
    assert not AuditEvent.objects.filter(actor=tenant_b.user, action="token.revoked").exists()


@pytest.mark.django_db
def test_tokens_minted_by_the_owner_survive_later_resets(settings: Any, tenant_b: Tenant) -> None:
    settings.SIGNUP_VERIFY_EMAIL = False
    user, _ = _squat(VICTIM)
    _reset_by_mail(VICTIM)
    owner_raw = token_create(user=user, label="owner's laptop")[1]

    page = _reset_by_mail(VICTIM)

    assert "were revoked" not in page.content.decode()
    assert _lists_projects(owner_raw) and _lists_projects(tenant_b.user_raw)


@pytest.mark.django_db
def test_a_confirmed_account_keeps_its_tokens_through_a_reset(tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert tenant_a.user.email_confirmed_at is not None  # made by an operator path (the services)
    page = _reset_by_mail(tenant_a.user.email)
    assert "were revoked" not in page.content.decode()
    assert _lists_projects(tenant_a.user_raw) and _lists_projects(tenant_a.project_raw)
    assert _lists_projects(tenant_b.user_raw)


@pytest.mark.django_db
def test_a_verified_sign_up_is_confirmed_by_its_link(settings: Any, tenant_b: Tenant) -> None:
    settings.SIGNUP_VERIFY_EMAIL, settings.PUBLIC_URL = True, "https://brain.example.com"
    Client().post("/accounts/signup/", {"email": VICTIM, "password": "a verified long pass 55"})
    assert User.objects.get(email=VICTIM).email_confirmed_at is None
    link = re.search(r"https://brain\.example\.com(/accounts/signup/verify/\S+)", mail.outbox[-1].body)
    assert link is not None
    assert Client().post(link.group(1)).status_code == 302
    user = User.objects.get(email=VICTIM)
    assert user.is_active and user.email_confirmed_at is not None
    raw = token_create(user=user, label="laptop")[1]
    _reset_by_mail(VICTIM)
    assert _lists_projects(raw)
    assert tenant_b.user.email_confirmed_at is not None and _lists_projects(tenant_b.user_raw)
