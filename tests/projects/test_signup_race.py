"""Sign-ups at once: two addresses with the same local part both get a personal org (the second used to fail on
the slug after its user was stored, leaving an account without the org every project lookup needs), and the same
address twice (a double click) is one account and a CONFLICT, not a 500."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from brain.errors import Conflict
from projects.models import Org, User
from projects.services.accounts import user_create
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _while_one_is_uncommitted(first: str, second: str) -> list[BaseException]:
    """Creates `first` inside a transaction left open while `second` is created from another thread."""
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def run(body: Callable[[], None]) -> None:
        try:
            body()
        except BaseException as exc:  # the caller's assertions name it
            errors.append(exc)
        finally:
            connection.close()

    def holder() -> None:
        with transaction.atomic():
            user_create(email=first)
            inside.set()
            release.wait(10)

    one = threading.Thread(target=run, args=(holder,))
    one.start()
    assert inside.wait(10), errors
    two = threading.Thread(target=run, args=(lambda: user_create(email=second),))
    two.start()
    two.join(0.5)  # it waits on the first one's turn (or, before, on its uncommitted slug)
    release.set()
    one.join(10)
    two.join(10)
    return errors


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
