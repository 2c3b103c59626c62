"""Projects created at once under names that slugify alike ("Race!" and "Race?" are both `race`; every
non-Latin name is `project`). Found by `brain bench fuzz`: the second insert met the first's uncommitted
slug and answered 500; with several clients the retry met the next one, until the retries ran out (the
500 of run 3). Now creates in one org take turns (an advisory lock), so each sees the slugs before it."""

from __future__ import annotations

import threading
import time

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
    second.join(0.5)  # waiting for the holder's turn to end
    release.set()
    first.join(10)
    second.join(10)
    assert errors == []
    slugs = dict(Project.objects.filter(org__memberships__user=tenant_a.user, name__startswith="Race")
                 .values_list("name", "slug"))
    assert slugs == {"Race!": "race", "Race?": "race-2"}
    assert set(Project.objects.filter(org__memberships__user=tenant_b.user).values_list("id", "slug")) == others


def _advisory_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


@pytest.mark.django_db(transaction=True)
def test_a_create_waits_for_an_uncommitted_one_in_the_same_org_only(tenant_a: Tenant, tenant_b: Tenant) -> None:
    inside, release = threading.Event(), threading.Event()
    results: dict[str, tuple[str, bool]] = {}

    def create(user_of: Tenant, name: str, hold: bool = False) -> None:
        try:
            with transaction.atomic():
                project, created = project_ensure_named(user=user_of.user, name=name)
                results[name] = (project.slug, created)
                if hold:
                    inside.set()
                    release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=create, args=(tenant_a, "日本", True))
    holder.start()
    assert inside.wait(10)
    racers = [threading.Thread(target=create, args=(tenant_a, name)) for name in ("中国", "日本")]
    for racer in racers:
        racer.start()
    deadline = time.monotonic() + 10
    while _advisory_waiters() < 2 and time.monotonic() < deadline:  # both wait for the holder's turn
        time.sleep(0.05)
    assert _advisory_waiters() == 2 and not results.keys() - {"日本"}
    # The other tenant's org is another queue: its create does not wait.
    other = threading.Thread(target=create, args=(tenant_b, "中国"))
    other.start()
    other.join(10)
    assert results["中国"] == ("project", True)
    release.set()
    for thread in (holder, *racers):
        thread.join(10)
    assert set(Project.objects.filter(org__memberships__user=tenant_a.user).values_list("name", "slug")) >= {
        ("日本", "project"), ("中国", "project-2")}
    assert Project.objects.filter(org__memberships__user=tenant_a.user, name="日本").count() == 1


@pytest.mark.django_db(transaction=True)
def test_many_concurrent_creates_with_one_slug_all_succeed(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Eight threads creating non-Latin names at once (all slug `project`): before the fix some answered
    IntegrityError after three rounds of meeting each other's uncommitted slugs."""
    others = set(Project.objects.filter(org__memberships__user=tenant_b.user).values_list("id", "slug"))
    errors: list[BaseException] = []
    names = [[f"{chr(0x3041 + thread)}{chr(0x4E00 + n)}" for n in range(6)] for thread in range(8)]

    def worker(mine: list[str]) -> None:
        try:
            for name in mine:
                project_ensure_named(user=tenant_a.user, name=name)
        except BaseException as exc:  # the assertion below names it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(mine,)) for mine in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    slugs = list(Project.objects.filter(org__memberships__user=tenant_a.user, slug__startswith="project")
                 .values_list("slug", flat=True))
    assert len(slugs) == 48 and len(set(slugs)) == 48
    assert set(Project.objects.filter(org__memberships__user=tenant_b.user).values_list("id", "slug")) == others
