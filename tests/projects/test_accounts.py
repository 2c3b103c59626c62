"""Sign-up, throttled sign-in, sign-out, password change and reset, through the real views."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client

from projects.models import Membership, Org, User
from tests.conftest import Tenant

PASSWORD = "correct horse battery staple"


@pytest.mark.django_db
def test_sign_up_creates_user_with_personal_org_and_signs_in() -> None:
    client = Client()
    response = client.post("/accounts/signup/", {"email": "New@Example.COM", "password": "a-long enough pass 42"})
    assert response.status_code == 302 and response["Location"] == "/settings/tokens"
    user = User.objects.get(email="new@example.com")
    org = Org.objects.get(personal_for=user)
    assert Membership.objects.get(org=org, user=user).role == "owner"
    assert client.get("/settings/tokens").status_code == 200


@pytest.mark.django_db
def test_sign_up_rejects_taken_email_and_weak_password(tenant_a: Tenant) -> None:
    response = Client().post("/accounts/signup/", {"email": tenant_a.user.email, "password": "a-long enough pass 42"})
    assert response.status_code == 200 and "exists already" in response.content.decode()
    response = Client().post("/accounts/signup/", {"email": "x@example.com", "password": "123"})
    assert response.status_code == 200 and "too short" in response.content.decode()
    assert not User.objects.filter(email="x@example.com").exists()


@pytest.mark.django_db
def test_sign_in_and_out(tenant_a: Tenant) -> None:
    client = Client()
    response = client.post("/accounts/login/", {"username": tenant_a.user.email, "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/settings/tokens").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405  # sign-out is a POST, so no link can trigger it
    client.post("/accounts/logout/")
    assert client.get("/settings/tokens")["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_password_change(tenant_a: Tenant) -> None:
    client = Client()
    client.force_login(tenant_a.user)
    response = client.post("/accounts/password/change/", {
        "old_password": PASSWORD, "new_password1": "another long pass 77", "new_password2": "another long pass 77",
    })
    assert response.status_code == 302
    tenant_a.user.refresh_from_db()
    assert tenant_a.user.check_password("another long pass 77")


@pytest.mark.django_db
def test_password_reset_by_email_link(settings: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    settings.PUBLIC_URL, settings.ALLOWED_HOSTS = "https://brain.example.com", ["*"]
    # A forged Host (accepted by a permissive ALLOWED_HOSTS) must not become the link's host.
    response = Client().post("/accounts/password/reset/", {"email": tenant_a.user.email}, HTTP_HOST="evil.example")
    assert response.status_code == 302
    assert len(mail.outbox) == 1 and mail.outbox[0].to == [tenant_a.user.email]
    assert "evil.example" not in mail.outbox[0].body
    link = re.search(r"https://brain\.example\.com(/accounts/password/reset/\S+)", mail.outbox[0].body)
    assert link is not None
    client = Client()
    form_page = client.get(link.group(1), follow=True)
    assert form_page.status_code == 200 and "Choose a new password" in form_page.content.decode()
    response = client.post(form_page.redirect_chain[-1][0], {
        "new_password1": "reset long pass 99", "new_password2": "reset long pass 99",
    })
    assert response.status_code == 302
    tenant_a.user.refresh_from_db()
    tenant_b.user.refresh_from_db()
    assert tenant_a.user.check_password("reset long pass 99")
    assert tenant_b.user.check_password(PASSWORD)


@pytest.mark.django_db
def test_password_reset_for_unknown_email_sends_nothing() -> None:
    assert Client().post("/accounts/password/reset/", {"email": "nobody@example.com"}).status_code == 302
    assert mail.outbox == []


def test_pages_render_with_labels() -> None:
    html = Client().get("/accounts/signup/").content.decode()
    assert '<label for="id_email">' in html and '<label for="id_password">' in html
    assert 'name="viewport"' in html and "Skip to content" in html


def test_a_fields_help_and_errors_are_what_its_aria_describedby_names(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Django names a field's help and errors in aria-describedby; the form template gives them those ids, so a
    screen reader reads both (they pointed nowhere)."""
    page = Client().post("/accounts/signup/", {"email": "not-an-address", "password": "123"}).content.decode()
    described = re.findall(r'aria-describedby="([^"]+)"', page)
    assert described, "no field names its help or errors"
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    named = {ref for value in described for ref in value.split()}
    assert named <= ids, named - ids
    assert any(ref.endswith("_error") for ref in named)
