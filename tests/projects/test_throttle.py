"""Sign-in throttling on /accounts/login/ and /admin/login/, the sign-up limit per address, sign-up with e-mail
verification, and the purge of throttle rows, through the real views and the real database (the counts every
replica shares)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from projects.models import LoginThrottle, User
from projects.services.throttle import login_throttles_purge
from projects.tasks import purge_expired
from tests.conftest import Tenant

PASSWORD = "correct horse battery staple"
LOCKED = "Too many failed sign-ins"


def sign_in(path: str, email: str, password: str, address: str = "10.0.0.1") -> Any:
    return Client(REMOTE_ADDR=address).post(path, {"username": email, "password": password})


def assert_locked(response: Any, *, minutes: int) -> None:
    """A lockout is HTTP 429 with Retry-After (seconds, at most the lockout) and the sign-in form saying when."""
    page = response.content.decode()
    assert response.status_code == 429, response.status_code
    assert 0 < int(response["Retry-After"]) <= minutes * 60
    assert LOCKED in page and f"Try again in {minutes} minute(s) (after " in page
    assert 'name="password"' in page and 'name="username"' in page  # still the form


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_five_failures_lock_the_account_from_that_address_even_for_the_right_password(
        path: str, tenant_a: Tenant, tenant_b: Tenant) -> None:
    User.objects.filter(pk__in=[tenant_a.user.pk, tenant_b.user.pk]).update(is_staff=True)  # admin needs staff
    for _ in range(5):
        response = sign_in(path, tenant_a.user.email, "wrong")
        assert response.status_code == 200 and LOCKED not in response.content.decode()
    # A fresh client (another browser, another web replica: the count lives in the database).
    response = sign_in(path, tenant_a.user.email, PASSWORD)
    assert_locked(response, minutes=15)
    assert "_auth_user_id" not in response.client.session
    # The owner signing in from another address is not locked out by these guesses ...
    assert sign_in(path, tenant_a.user.email, PASSWORD, address="10.0.0.2").status_code == 302
    # ... and the other tenant's account is not locked, not even from the guessing address.
    assert sign_in(path, tenant_b.user.email, PASSWORD).status_code == 302
    # When the lockout ends, the same form signs in again from the guessing address.
    LoginThrottle.objects.filter(locked_until__isnull=False).update(locked_until=timezone.now())
    assert sign_in(path, tenant_a.user.email, PASSWORD).status_code == 302


@pytest.mark.django_db
def test_admin_and_dashboard_failures_share_one_counter(tenant_a: Tenant) -> None:
    User.objects.filter(pk=tenant_a.user.pk).update(is_staff=True)
    for n in range(5):
        sign_in("/admin/login/" if n % 2 else "/accounts/login/", tenant_a.user.email, "wrong")
    assert_locked(sign_in("/admin/login/", tenant_a.user.email, PASSWORD), minutes=15)


@pytest.mark.django_db
def test_one_address_guessing_many_accounts_is_locked_out(settings: Any, tenant_a: Tenant) -> None:
    for n in range(30):
        sign_in("/accounts/login/", f"guess{n}@example.com", "wrong", address="10.9.9.9")
    assert_locked(sign_in("/accounts/login/", tenant_a.user.email, PASSWORD, address="10.9.9.9"), minutes=15)
    assert sign_in("/accounts/login/", tenant_a.user.email, PASSWORD, address="10.9.9.8").status_code == 302


@pytest.mark.django_db
def test_a_correct_password_clears_only_its_own_counter(tenant_a: Tenant) -> None:
    sign_in("/accounts/login/", tenant_a.user.email, "wrong")
    pair = f"login:{tenant_a.user.email}|10.0.0.1"
    assert LoginThrottle.objects.get(key=pair).failures == 1
    assert sign_in("/accounts/login/", tenant_a.user.email, PASSWORD).status_code == 302
    assert not LoginThrottle.objects.filter(key=pair).exists()
    assert LoginThrottle.objects.get(key="ip:10.0.0.1").failures == 1  # the address keeps counting


@pytest.mark.django_db
def test_the_limits_follow_the_environment_settings(settings: Any, tenant_a: Tenant) -> None:
    settings.BRAIN_THROTTLE = {"login_max_failures": 2, "login_lockout_minutes": 1}
    for _ in range(2):
        sign_in("/accounts/login/", tenant_a.user.email, "wrong")
    assert_locked(sign_in("/accounts/login/", tenant_a.user.email, PASSWORD), minutes=1)


@pytest.mark.django_db
def test_sign_ups_are_limited_per_address(settings: Any) -> None:
    settings.BRAIN_THROTTLE = {"signups_per_address_per_hour": 2}

    def sign_up(n: int, address: str) -> Any:
        return Client(REMOTE_ADDR=address).post(
            "/accounts/signup/", {"email": f"new{n}@example.com", "password": "a-long enough pass 42"})

    assert [sign_up(n, "10.5.5.5").status_code for n in range(2)] == [302, 302]
    refused = sign_up(2, "10.5.5.5")
    assert refused.status_code == 429 and "Too many accounts" in refused.content.decode()
    assert 0 < int(refused["Retry-After"]) <= 3600
    assert "Try again in 60 minute(s)" in refused.content.decode()
    assert not User.objects.filter(email="new2@example.com").exists()
    assert sign_up(3, "10.5.5.6").status_code == 302  # another address is not affected


@pytest.mark.django_db
def test_mail_on_request_is_limited_per_recipient_and_per_address(settings: Any, tenant_a: Tenant,
                                                                  tenant_b: Tenant) -> None:
    """Password resets and invitations are mail a stranger can make the server send: each recipient gets a few an
    hour, each client address can ask for a few more. A throttled reset reads like any other (no account is
    revealed); a throttled invitation says so and stores nothing."""
    from projects.models import Invitation, Org
    from projects.services.orgs import org_create

    settings.BRAIN_THROTTLE = {"mails_per_recipient_per_hour": 2, "mails_per_address_per_hour": 3}

    def reset(email: str, address: str) -> Any:
        return Client(REMOTE_ADDR=address).post("/accounts/password/reset/", {"email": email})

    assert [reset(tenant_a.user.email, "10.6.6.6").status_code for _ in range(3)] == [302, 302, 302]
    assert len(mail.outbox) == 2  # the third reset to the same inbox within the hour is not sent
    assert reset(tenant_b.user.email, "10.6.6.6").status_code == 302 and len(mail.outbox) == 3  # the address's 3rd
    assert reset(tenant_b.user.email, "10.6.6.6").status_code == 302 and len(mail.outbox) == 3  # its 4th: not sent
    assert reset(tenant_b.user.email, "10.6.6.7").status_code == 302 and len(mail.outbox) == 4  # another address
    org = org_create(user=tenant_a.user, name="Acme")
    owner = Client(REMOTE_ADDR="10.8.8.8")
    owner.force_login(tenant_a.user)
    for _ in range(2):
        owner.post(f"/orgs/{org.slug}/invite", {"email": "guest@example.com", "role": "member"})
    refused = owner.post(f"/orgs/{org.slug}/invite", {"email": "guest@example.com", "role": "member"}, follow=True)
    assert "Too many invitation mails" in refused.content.decode()
    assert Invitation.objects.filter(org=org).count() == 2 and len(mail.outbox) == 6
    assert not Org.objects.filter(memberships__user=tenant_b.user, personal_for__isnull=True).exists()


@pytest.mark.django_db
def test_purge_deletes_stale_rows_and_keeps_lockouts(tenant_a: Tenant) -> None:
    now = timezone.now()
    old, recent = now - timedelta(hours=2), now - timedelta(minutes=1)
    LoginThrottle.objects.create(key="ip:10.0.0.7", failures=3, window_started_at=old)  # stale
    LoginThrottle.objects.create(key="signup:10.0.0.7", failures=1, window_started_at=recent)  # window open
    LoginThrottle.objects.create(key="ip:10.0.0.8", failures=30, window_started_at=old,
                                 locked_until=now + timedelta(minutes=5))  # still locked
    assert login_throttles_purge() == 1
    assert set(LoginThrottle.objects.values_list("key", flat=True)) == {"signup:10.0.0.7", "ip:10.0.0.8"}
    LoginThrottle.objects.filter(key="ip:10.0.0.8").update(locked_until=now - timedelta(seconds=1))
    purge_expired()  # the hourly beat job does the same
    assert set(LoginThrottle.objects.values_list("key", flat=True)) == {"signup:10.0.0.7"}


def _link(body: str) -> str:
    match = re.search(r"https://brain\.example\.com(/accounts/signup/verify/\S+/)", body)
    assert match is not None, body
    return match.group(1)


@pytest.mark.django_db
def test_sign_up_with_e_mail_verification(settings: Any, tenant_a: Tenant) -> None:
    settings.SIGNUP_VERIFY_EMAIL, settings.PUBLIC_URL = True, "https://brain.example.com"
    form = {"email": "new@example.com", "password": "a-long enough pass 42"}
    response = Client().post("/accounts/signup/", form)
    assert response.status_code == 200 and "Confirm your e-mail" in response.content.decode()
    assert User.objects.get(email="new@example.com").is_active is False
    assert sign_in("/accounts/login/", "new@example.com", form["password"]).status_code == 200  # not yet
    first = _link(mail.outbox[-1].body)
    # Signing up again before verifying sends a new link with the new password; the first link is void.
    Client().post("/accounts/signup/", {**form, "password": "another long pass 43"})
    second = _link(mail.outbox[-1].body)
    browser = Client()
    assert browser.get(second).status_code == 200  # a mail scanner following the link activates nothing
    assert User.objects.get(email="new@example.com").is_active is False
    assert browser.post(first).status_code == 400
    assert browser.post(second)["Location"] == "/settings/tokens"
    assert User.objects.get(email="new@example.com").is_active is True
    assert browser.get("/settings/tokens").status_code == 200  # signed in
    assert Client().post(second).status_code == 400  # once only
    assert sign_in("/accounts/login/", "new@example.com", "another long pass 43").status_code == 302
    # Another tenant's account is untouched, and an active account's address cannot be signed up again.
    taken = Client().post("/accounts/signup/", {**form, "email": tenant_a.user.email})
    assert "exists already" in taken.content.decode() and tenant_a.user.email not in mail.outbox[-1].to
    assert Client().post("/accounts/signup/verify/bm90LWEtdXVpZA/x-y/").status_code == 400  # mangled link


@pytest.mark.django_db
def test_without_verification_sign_up_signs_in_at_once(settings: Any) -> None:
    settings.SIGNUP_VERIFY_EMAIL = False
    response = Client().post("/accounts/signup/", {"email": "now@example.com", "password": "a-long enough pass 42"})
    assert response.status_code == 302 and User.objects.get(email="now@example.com").is_active
    assert mail.outbox == []


@pytest.mark.django_db
def test_a_sign_up_whose_mail_fails_says_so_and_a_later_one_sends_the_link(settings: Any, tenant_a: Tenant) -> None:
    from tests.support.proc import free_port

    settings.SIGNUP_VERIFY_EMAIL, settings.PUBLIC_URL = True, "https://brain.example.com"
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 5
    form = {"email": "late@example.com", "password": "a-long enough pass 42"}
    failed = Client().post("/accounts/signup/", form)
    assert failed.status_code == 200 and "could not be sent just now" in failed.content.decode()
    assert User.objects.get(email="late@example.com").is_active is False
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    again = Client().post("/accounts/signup/", form)
    assert again.status_code == 200 and _link(mail.outbox[-1].body)
    assert User.objects.get(pk=tenant_a.user.pk).is_active
