from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from brain.errors import Conflict, NotFound, ValidationFailed
from projects.models import ApiToken, Membership, Org, Project
from projects.selectors.accounts import (
    project_visible,
    projects_visible,
    token_digest,
    token_for_raw,
    visible_project_ids,
)
from projects.services.accounts import (
    project_ensure_default,
    project_ensure_named,
    token_create,
    token_revoke,
    token_touch,
    user_create,
)


@pytest.mark.django_db
def test_user_create_makes_personal_org_with_owner_membership() -> None:
    user = user_create(email="  Carol@Example.COM ", password="pw-123456")
    assert user.email == "carol@example.com"
    org = Org.objects.get(personal_for=user)
    assert Membership.objects.get(org=org, user=user).role == "owner"
    assert user.check_password("pw-123456")


@pytest.mark.django_db
def test_user_create_rejects_bad_and_duplicate_email_without_writing() -> None:
    with pytest.raises(ValidationFailed):
        user_create(email="not-an-email")
    user_create(email="dup@example.com")
    with pytest.raises(Conflict):
        user_create(email="DUP@example.com")
    assert Org.objects.count() == 1


def test_project_ensure_named_is_case_insensitive_and_keeps_first_fields(tenant_a, tenant_b) -> None:
    again, created = project_ensure_named(user=tenant_a.user, name="alpha app", framework="vue")
    assert (again.pk, created) == (tenant_a.project.pk, False)
    assert again.framework == "django"
    # Another user's identically named project is a different project in a different org.
    theirs, created = project_ensure_named(user=tenant_b.user, name="Alpha App")
    assert created and theirs.pk != tenant_a.project.pk


def test_project_names_are_validated(tenant_a) -> None:
    for bad in ["", "   ", "x" * 121]:
        with pytest.raises(ValidationFailed):
            project_ensure_named(user=tenant_a.user, name=bad)
    assert Project.objects.filter(org__personal_for=tenant_a.user).count() == 1


def test_slugs_are_unique_within_org(tenant_a) -> None:
    first, _ = project_ensure_named(user=tenant_a.user, name="Shop!")
    second, _ = project_ensure_named(user=tenant_a.user, name="Shop?")
    assert first.slug == "shop" and second.slug == "shop-2"


def test_default_project_is_created_once(db) -> None:
    user = user_create(email="new@example.com")
    assert project_ensure_default(user=user).pk == project_ensure_default(user=user).pk


@pytest.mark.django_db(transaction=True)
def test_concurrent_ensure_named_creates_one_project() -> None:
    user = user_create(email="race@example.com")
    results: list[Project] = []

    def worker() -> None:
        results.append(project_ensure_named(user=user, name="Racy")[0])
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({p.pk for p in results}) == 1
    assert Project.objects.filter(name__iexact="racy").count() == 1


def test_token_is_stored_only_as_digest(tenant_a) -> None:
    token, raw = token_create(user=tenant_a.user, label="x")
    stored = ApiToken.objects.get(pk=token.pk)
    assert stored.digest == token_digest(raw) and raw not in (stored.digest, stored.prefix)
    assert raw.startswith(stored.prefix)
    assert token_for_raw(raw=raw) == token


def test_revoked_and_expired_tokens_do_not_authenticate(tenant_a) -> None:
    token_revoke(user=tenant_a.user, token_id=tenant_a.user_token.pk)
    assert token_for_raw(raw=tenant_a.user_raw) is None
    ApiToken.objects.filter(pk=tenant_a.project_token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert token_for_raw(raw=tenant_a.project_raw) is None
    assert token_for_raw(raw="ebt_nope_nope") is None


def test_token_revoke_of_another_users_token_is_not_found(tenant_a, tenant_b) -> None:
    with pytest.raises(NotFound):
        token_revoke(user=tenant_b.user, token_id=tenant_a.user_token.pk)
    assert token_for_raw(raw=tenant_a.user_raw) is not None


def test_token_for_foreign_project_is_refused(tenant_a, tenant_b) -> None:
    with pytest.raises(NotFound):
        token_create(user=tenant_b.user, project=tenant_a.project)


def test_token_touch_writes_at_most_once_a_minute(tenant_a) -> None:
    token = tenant_a.user_token
    token_touch(token=token)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    token_touch(token=ApiToken.objects.get(pk=token.pk))
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first


def test_projects_visible_respects_token_scope_and_tenant(tenant_a, tenant_b) -> None:
    second, _ = project_ensure_named(user=tenant_a.user, name="Second")
    assert [p.pk for p in projects_visible(principal=tenant_a.principal)] == [tenant_a.project.pk, second.pk]
    assert [p.pk for p in projects_visible(principal=tenant_a.project_principal)] == [tenant_a.project.pk]
    assert tenant_a.project.pk not in {p.pk for p in projects_visible(principal=tenant_b.principal)}
    with pytest.raises(NotFound):
        project_visible(principal=tenant_b.principal, project_id=tenant_a.project.pk)
    with pytest.raises(NotFound):
        project_visible(principal=tenant_a.project_principal, project_id=second.pk)
    with pytest.raises(NotFound):
        project_visible(principal=tenant_a.principal, project_id="not-a-uuid")
    found = project_visible(principal=tenant_a.principal, project_id=str(second.pk))
    assert (found.pk, found.name, found.org.pk) == (second.pk, "Second", second.org_id)
    # A call whose authentication read the visible projects already looks the project up in that list.
    listed = replace(tenant_a.project_principal, listed=(tenant_a.project,))
    assert project_visible(principal=listed, project_id=tenant_a.project.pk).pk == tenant_a.project.pk
    with pytest.raises(NotFound):
        project_visible(principal=listed, project_id=second.pk)
    assert visible_project_ids(principal=tenant_a.principal) == [tenant_a.project.pk, second.pk]
    assert visible_project_ids(principal=tenant_a.project_principal) == [tenant_a.project.pk]
    assert not {tenant_a.project.pk, second.pk} & set(visible_project_ids(principal=tenant_b.principal))
