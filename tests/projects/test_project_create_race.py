"""Two projects created at once under different names that slugify alike ("Race!" and "Race?" are both
`race`): the second insert meets the first's slug. Found by `brain bench fuzz` (six concurrent clients):
it answered 500; now the second create looks again and takes the next free slug."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from projects.models import Project
from projects.services.accounts import project_ensure_named
from tests.conftest import Tenant


@pytest.mark.django_db(transaction=True)
def test_a_concurrent_create_with_the_same_slug_takes_the_next_one(tenant_a: Tenant, tenant_b: Tenant) -> None:
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    others = set(Project.objects.filter(org__memberships__user=tenant_b.user).values_list("id", "slug"))

    def holder() -> None:
        try:
            with transaction.atomic():  # "Race!" inserted, not yet committed: its slug is invisible to others
                project_ensure_named(user=tenant_a.user, name="Race!")
                inside.set()
                release.wait(10)
        finally:
            connection.close()

    def racer() -> None:
        try:
            project_ensure_named(user=tenant_a.user, name="Race?")
        except BaseException as exc:  # the assertion below names it
            errors.append(exc)
        finally:
            connection.close()

    first = threading.Thread(target=holder)
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=racer)
    second.start()
    second.join(0.5)  # blocked on the unique slug index until the holder commits
    release.set()
    first.join(10)
    second.join(10)
    assert errors == []
    slugs = dict(Project.objects.filter(org__memberships__user=tenant_a.user, name__startswith="Race")
                 .values_list("name", "slug"))
    assert slugs == {"Race!": "race", "Race?": "race-2"}
    assert set(Project.objects.filter(org__memberships__user=tenant_b.user).values_list("id", "slug")) == others
