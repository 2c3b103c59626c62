"""Sign-ups at once: two addresses with the same local part both get a personal org (the second used to fail on
the slug after its user was stored, leaving an account without the org every project lookup needs), and the same
address twice (a double click) is one account and a CONFLICT, not a 500."""

from __future__ import annotations

import pytest

from brain.errors import Conflict
from projects.models import Org, User
from projects.services.accounts import user_create
from tests.conftest import Tenant
from tests.support.race import while_uncommitted

pytestmark = pytest.mark.django_db(transaction=True)


def _while_one_is_uncommitted(first: str, second: str) -> list[BaseException]:
    """Creates `first` inside a transaction left open while `second` is created from another thread."""
    return while_uncommitted(lambda: user_create(email=first), lambda: user_create(email=second))


def test_same_local_part_at_once_both_get_a_personal_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert _while_one_is_uncommitted("carol@c1.example", "carol@c2.example") == []
    for email in ("carol@c1.example", "carol@c2.example"):
        user = User.objects.get(email=email)
        assert Org.objects.filter(personal_for=user, memberships__user=user).count() == 1
    slugs = set(Org.objects.filter(personal_for__email__startswith="carol@").values_list("slug", flat=True))
    assert slugs == {"personal-carol", "personal-carol-2"}
    assert Org.objects.filter(personal_for=tenant_b.user).count() == 1


def test_the_same_address_twice_at_once_is_one_account_and_a_conflict(tenant_a: Tenant, tenant_b: Tenant) -> None:
    errors = _while_one_is_uncommitted("dave@x.example", "dave@x.example")
    assert [type(e) for e in errors] == [Conflict]
    assert User.objects.filter(email="dave@x.example").count() == 1
    assert Org.objects.filter(personal_for__email="dave@x.example").count() == 1
