"""Guessing spread over many addresses locks an account for strangers, never for the browsers its owner has
signed in from before; a known browser's own failures lock only itself. Through the real sign-in views."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from projects.known_browser import COOKIE
from projects.models import LoginThrottle, User
from tests.conftest import Tenant
from tests.projects.test_throttle import PASSWORD, assert_locked

LOGIN = "/accounts/login/"


def _browser_that_signed_in(email: str, path: str = LOGIN) -> Client:
    """The owner's browser: signs in once, keeps the cookie, signs out."""
    browser = Client(REMOTE_ADDR="10.1.0.1")
    assert browser.post(path, {"username": email, "password": PASSWORD}).status_code == 302
    assert COOKIE in browser.cookies and browser.cookies[COOKIE]["httponly"]
    browser.post("/accounts/logout/")
    return browser


def _guess_from_many_addresses(email: str, addresses: int) -> None:
    for n in range(addresses):
        for _ in range(2):
            Client(REMOTE_ADDR=f"10.7.0.{n}").post(LOGIN, {"username": email, "password": "wrong"})


def _attempt(browser: Client, email: str, password: str, address: str) -> Any:
    browser.defaults["REMOTE_ADDR"] = address
    return browser.post(LOGIN, {"username": email, "password": password})


@pytest.mark.django_db
def test_guessing_from_many_addresses_never_locks_the_owners_browser(settings: Any, tenant_a: Tenant,
                                                                     tenant_b: Tenant) -> None:
    settings.BRAIN_THROTTLE = {"account_failures": 10}
    owners = _browser_that_signed_in(tenant_a.user.email)
    _guess_from_many_addresses(tenant_a.user.email, addresses=5)  # 10 failures: the account-wide ceiling

    # A browser that never signed in is refused, even with the right password from a fresh address ...
    assert_locked(Client(REMOTE_ADDR="10.2.0.1").post(LOGIN, {"username": tenant_a.user.email,
                                                                "password": PASSWORD}), minutes=15)
    # ... the owner's browser signs in, from anywhere, even from a guessing address.
    assert _attempt(owners, tenant_a.user.email, PASSWORD, "10.7.0.3").status_code == 302
    # The other tenant's known browser counts for nothing on this account: it is a stranger here.
    others = _browser_that_signed_in(tenant_b.user.email)
    assert_locked(_attempt(others, tenant_a.user.email, PASSWORD, "10.3.0.1"), minutes=15)
    # The other tenant's own account is not locked.
    assert _attempt(others, tenant_b.user.email, PASSWORD, "10.3.0.1").status_code == 302


@pytest.mark.django_db
def test_a_known_browsers_own_failures_lock_only_itself(tenant_a: Tenant, tenant_b: Tenant) -> None:
    owners = _browser_that_signed_in(tenant_a.user.email)
    for _ in range(5):
        assert _attempt(owners, tenant_a.user.email, "wrong", "10.1.0.1").status_code == 200
    assert_locked(_attempt(owners, tenant_a.user.email, PASSWORD, "10.1.0.1"), minutes=15)
    # Its failures were counted under its own key only: the address and the account are free.
    assert not LoginThrottle.objects.filter(key__startswith="email:").exists()
    assert not LoginThrottle.objects.filter(key__startswith="ip:").exists()
    fresh = Client(REMOTE_ADDR="10.1.0.1")
    assert fresh.post(LOGIN, {"username": tenant_a.user.email, "password": PASSWORD}).status_code == 302
    assert Client(REMOTE_ADDR="10.1.0.1").post(LOGIN, {"username": tenant_b.user.email,
                                                        "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_an_altered_cookie_is_a_stranger(settings: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    settings.BRAIN_THROTTLE = {"account_failures": 10}
    owners = _browser_that_signed_in(tenant_a.user.email)
    _guess_from_many_addresses(tenant_a.user.email, addresses=5)
    value = owners.cookies[COOKIE].value
    owners.cookies[COOKIE] = value[:-3] + ("AAA" if not value.endswith("AAA") else "BBB")
    assert_locked(_attempt(owners, tenant_a.user.email, PASSWORD, "10.1.0.1"), minutes=15)
    assert Client(REMOTE_ADDR="10.1.0.9").post(LOGIN, {"username": tenant_b.user.email,
                                                        "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_the_admin_sign_in_remembers_the_browser_too(settings: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    settings.BRAIN_THROTTLE = {"account_failures": 10}
    User.objects.filter(pk=tenant_a.user.pk).update(is_staff=True)
    owners = _browser_that_signed_in(tenant_a.user.email, path="/admin/login/")
    _guess_from_many_addresses(tenant_a.user.email, addresses=5)
    owners.defaults["REMOTE_ADDR"] = "10.4.0.1"
    assert owners.post("/admin/login/", {"username": tenant_a.user.email, "password": PASSWORD}).status_code == 302
    assert not LoginThrottle.objects.filter(key__contains=tenant_b.user.email).exists()


@pytest.mark.django_db
def test_a_new_password_forgets_the_browsers_known_before(settings: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    settings.BRAIN_THROTTLE = {"account_failures": 10}
    owners = _browser_that_signed_in(tenant_a.user.email)
    others = _browser_that_signed_in(tenant_b.user.email)
    tenant_a.user.set_password("a brand new long pass 8")
    tenant_a.user.save(update_fields=["password"])
    _guess_from_many_addresses(tenant_a.user.email, addresses=5)
    assert_locked(_attempt(owners, tenant_a.user.email, "a brand new long pass 8", "10.1.0.1"), minutes=15)
    # The other tenant's browser is still known to its own, unchanged account.
    _guess_from_many_addresses(tenant_b.user.email, addresses=5)
    assert _attempt(others, tenant_b.user.email, PASSWORD, "10.3.0.1").status_code == 302
