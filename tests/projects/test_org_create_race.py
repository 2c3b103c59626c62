"""Team orgs created at once: the same form sent twice makes one team and a CONFLICT (it made two teams of one
name), and two people naming their teams alike at the same moment both get one, under different slugs (the second
used to end on the unique slug index as a 500)."""

from __future__ import annotations

import pytest

from brain.errors import Conflict
from projects.models import Membership, Org
from projects.services.orgs import org_create
from tests.conftest import Tenant
from tests.support.race import while_uncommitted

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_same_team_twice_at_once_is_one_team_and_a_conflict(tenant_a: Tenant, tenant_b: Tenant) -> None:
    errors = while_uncommitted(lambda: org_create(user=tenant_a.user, name="Acme"),
                               lambda: org_create(user=tenant_a.user, name="acme "))
    assert [type(e) for e in errors] == [Conflict]
    assert "/orgs/acme/" in str(errors[0])
    assert Org.objects.filter(name__iexact="acme").count() == 1
    assert not Membership.objects.filter(user=tenant_b.user, org__name="Acme").exists()


def test_two_people_naming_a_team_alike_at_once_both_get_one(tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert while_uncommitted(lambda: org_create(user=tenant_a.user, name="Acme"),
                             lambda: org_create(user=tenant_b.user, name="Acme")) == []
    slugs = {m.user_id: m.org.slug for m in Membership.objects.filter(org__name="Acme").select_related("org")}
    assert slugs == {tenant_a.user.id: "acme", tenant_b.user.id: "acme-2"}


def test_another_owners_team_or_a_personal_org_does_not_block_the_name(tenant_a: Tenant, tenant_b: Tenant) -> None:
    org_create(user=tenant_b.user, name="Shared Name")
    assert org_create(user=tenant_a.user, name="Shared Name").slug == "shared-name-2"
    personal = Org.objects.get(personal_for=tenant_a.user)
    assert org_create(user=tenant_a.user, name=personal.name).personal_for_id is None


def test_the_dashboard_form_sent_twice_shows_the_reason(tenant_a: Tenant) -> None:
    from django.test import Client

    client = Client()
    client.force_login(tenant_a.user)
    assert client.post("/orgs/", {"name": "Acme Team"}).status_code == 302
    again = client.post("/orgs/", {"name": "Acme Team"})
    assert again.status_code in (200, 400) and "already own a team called Acme Team" in again.content.decode()
    assert Org.objects.filter(name="Acme Team").count() == 1
