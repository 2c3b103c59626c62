"""Team orgs, roles and invitations by e-mail link; the other tenant sees nothing of them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from projects.models import Invitation, Membership, Org
from projects.services.orgs import invitation_create, org_create
from tests.conftest import Tenant


def _client(tenant: Tenant) -> Client:
    client = Client()
    client.force_login(tenant.user)
    return client


PUBLIC = "https://brain.example.com"


@pytest.fixture(autouse=True)
def _public_url(settings: Any) -> None:
    settings.PUBLIC_URL = PUBLIC + "/"


def _invite(owner: Client, org: Org, email: str) -> str:
    # Sent from another Host than the public one: the link still names BRAIN_PUBLIC_URL.
    response = owner.post(f"/orgs/{org.slug}/invite", {"email": email, "role": "member"}, HTTP_HOST="localhost")
    assert response.status_code == 302
    assert "localhost" not in mail.outbox[-1].body
    match = re.search(re.escape(PUBLIC) + r"(/invitations/\S+/)", mail.outbox[-1].body)
    assert match is not None
    return match.group(1)


@pytest.mark.django_db
def test_create_team_invite_and_accept(tenant_a: Tenant, tenant_b: Tenant) -> None:
    alice = _client(tenant_a)
    response = alice.post("/orgs/", {"name": "Acme Team"})
    org = Org.objects.get(name="Acme Team")
    assert response["Location"] == f"/orgs/{org.slug}/"
    link = _invite(alice, org, tenant_b.user.email.upper())
    assert mail.outbox[-1].to == [tenant_b.user.email]
    bob = _client(tenant_b)
    assert bob.get(f"/orgs/{org.slug}/").status_code == 404  # not a member yet
    assert bob.post(link).status_code == 302
    assert Membership.objects.get(org=org, user=tenant_b.user).role == "member"
    assert tenant_b.user.email in bob.get(f"/orgs/{org.slug}/").content.decode()
    assert bob.post(link).status_code == 404  # a link works once


@pytest.mark.django_db
def test_invitation_for_someone_else_is_refused(tenant_a: Tenant, tenant_b: Tenant) -> None:
    org = org_create(user=tenant_a.user, name="Acme")
    _, raw = invitation_create(user=tenant_a.user, org=org, email="carol@c.example")
    response = _client(tenant_b).post(f"/invitations/{raw}/")
    assert response.status_code == 403 and "carol@c.example" in response.content.decode()
    assert not Membership.objects.filter(org=org, user=tenant_b.user).exists()


@pytest.mark.django_db
def test_expired_and_revoked_invitations_do_not_work(tenant_a: Tenant, tenant_b: Tenant) -> None:
    org = org_create(user=tenant_a.user, name="Acme")
    invitation, raw = invitation_create(user=tenant_a.user, org=org, email=tenant_b.user.email)
    Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now())
    assert _client(tenant_b).post(f"/invitations/{raw}/").status_code == 404
    invitation, raw = invitation_create(user=tenant_a.user, org=org, email=tenant_b.user.email)
    _client(tenant_a).post(f"/orgs/{org.slug}/invitations/{invitation.pk}/revoke")
    assert _client(tenant_b).post(f"/invitations/{raw}/").status_code == 404
    assert not Membership.objects.filter(org=org, user=tenant_b.user).exists()


@pytest.mark.django_db
def test_accepting_needs_sign_in(tenant_a: Tenant) -> None:
    org = org_create(user=tenant_a.user, name="Acme")
    _, raw = invitation_create(user=tenant_a.user, org=org, email="new@n.example")
    response = Client().get(f"/invitations/{raw}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/invitations/")


@pytest.mark.django_db
def test_members_cannot_invite_and_the_last_owner_stays(tenant_a: Tenant, tenant_b: Tenant) -> None:
    org = org_create(user=tenant_a.user, name="Acme")
    bob_membership = Membership.objects.create(org=org, user=tenant_b.user, role="member")
    bob = _client(tenant_b)
    bob.post(f"/orgs/{org.slug}/invite", {"email": "x@x.example", "role": "member"})
    assert not Invitation.objects.filter(org=org).exists()
    alice_membership = Membership.objects.get(org=org, user=tenant_a.user)
    alice = _client(tenant_a)
    alice.post(f"/orgs/{org.slug}/members/{alice_membership.pk}/role", {"role": "member"})
    assert Membership.objects.get(pk=alice_membership.pk).role == "owner"
    alice.post(f"/orgs/{org.slug}/members/{bob_membership.pk}/role", {"role": "owner"})
    assert Membership.objects.get(pk=bob_membership.pk).role == "owner"
    alice.post(f"/orgs/{org.slug}/members/{alice_membership.pk}/remove")  # leaves; bob still owns it
    assert list(Membership.objects.filter(org=org).values_list("user__email", flat=True)) == [tenant_b.user.email]


@pytest.mark.django_db
def test_personal_org_takes_no_invitations(tenant_a: Tenant) -> None:
    org = Org.objects.get(personal_for=tenant_a.user)
    _client(tenant_a).post(f"/orgs/{org.slug}/invite", {"email": "x@x.example", "role": "member"})
    assert not Invitation.objects.exists() and mail.outbox == []


@pytest.mark.django_db
def test_other_tenant_cannot_touch_an_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    org = org_create(user=tenant_a.user, name="Acme")
    membership = Membership.objects.get(org=org, user=tenant_a.user)
    bob = _client(tenant_b)
    assert bob.get(f"/orgs/{org.slug}/").status_code == 404
    assert bob.post(f"/orgs/{org.slug}/members/{membership.pk}/remove").status_code == 404
    assert "Acme" not in bob.get("/orgs/").content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()


@pytest.mark.django_db
def test_an_org_name_is_one_line_and_its_invitation_mail_goes_out(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """A line break in the name made the mail's subject invalid: the invitation was saved, the page answered 500."""
    alice = _client(tenant_a)
    alice.post("/orgs/", {"name": "Acme\r\nBcc: everyone@example.com"})
    org = Org.objects.get(memberships__user=tenant_a.user, personal_for__isnull=True)
    assert org.name == "Acme Bcc: everyone@example.com"
    Org.objects.filter(pk=org.pk).update(name="Old\nname")  # one named before names were kept to one line
    _invite(alice, Org.objects.get(pk=org.pk), tenant_b.user.email)
    assert mail.outbox[-1].subject == "Join Old name on External Brain"
    assert Invitation.objects.filter(org=org).count() == 1


@pytest.mark.django_db
def test_a_refused_invitation_keeps_the_address_typed_and_says_why(tenant_a: Tenant, tenant_b: Tenant) -> None:
    alice = _client(tenant_a)
    alice.post("/orgs/", {"name": "Acme Team"})
    org = Org.objects.get(name="Acme Team")
    bad = alice.post(f"/orgs/{org.slug}/invite", {"email": "carol@@c.example", "role": "member"})
    page = bad.content.decode()
    assert bad.status_code == 400 and 'value="carol@@c.example"' in page and "valid email" in page.lower()
    taken = alice.post(f"/orgs/{org.slug}/invite", {"email": tenant_a.user.email, "role": "member"})
    assert taken.status_code == 400 and f'value="{tenant_a.user.email}"' in taken.content.decode()
    assert not Invitation.objects.filter(org=org).exists() and not mail.outbox
    assert _client(tenant_b).post(f"/orgs/{org.slug}/invite", {"email": "x@x.example"}).status_code == 404


@pytest.mark.django_db
def test_an_invitation_whose_mail_fails_is_kept_and_its_link_shown(settings: Any, tenant_a: Tenant,
                                                                   tenant_b: Tenant) -> None:
    """A mail server that cannot be reached (a real SMTP backend, pointed at a closed port) was a 500 after the
    invitation was stored, and a retry stored a second one."""
    from tests.support.proc import free_port

    alice = _client(tenant_a)
    alice.post("/orgs/", {"name": "Acme Team"})
    org = Org.objects.get(name="Acme Team")
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 5
    answer = alice.post(f"/orgs/{org.slug}/invite", {"email": "carol@c.example", "role": "member"}, follow=True)
    page = answer.content.decode()
    assert answer.status_code == 200 and "could not be sent" in page
    link = re.search(re.escape(PUBLIC) + r"(/invitations/[^\s<\"]+/)", page)
    assert link is not None and Invitation.objects.filter(org=org, email="carol@c.example").count() == 1
    assert not Invitation.objects.exclude(org=org).exists()
