"""Sign-in and sign-up throttling, counted in the database so every web replica agrees.

A failed sign-in (the dashboard's /accounts/login/ and /admin/login/ alike) counts under three keys:

- the account from this address ("login:<email>|<address>"): a few failures lock this pair out; the owner
  signing in from elsewhere is not locked out by a stranger's guesses;
- the address ("ip:<address>"): one client trying many accounts;
- the account from anywhere ("email:<email>"): a high ceiling against guessing spread over many addresses.

A browser that signed in to the account before (projects.known_browser) is counted under its own key instead
("browser:<id>", the small limit): strangers' guesses, from one address or many, never lock the owner's own
browsers out, and that browser's own failures lock only itself.

Any key over its limit refuses the attempt, even with the right password, until its lockout ends. Sign-ups
count per address ("signup:<address>"). Mail the server sends on a stranger's request (password resets,
invitations) counts per recipient ("mail-to:<email>") and per requesting address ("mail-from:<address>"), so
nobody can use the server to flood an inbox. Rows are purged by the hourly `projects.purge_expired` job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from brain.config import overridden
from projects.models import LoginThrottle

KEY_PART_MAX = 200  # "login:" + e-mail + "|" + address fits the 300-character key


@dataclass(frozen=True)
class Limit:
    failures: int
    window: timedelta
    lockout: timedelta


@dataclass(frozen=True)
class ThrottleSettings:
    """Environment: BRAIN_LOGIN_MAX_FAILURES, BRAIN_LOGIN_LOCKOUT_MINUTES, BRAIN_SIGNUPS_PER_ADDRESS_PER_HOUR."""

    login_max_failures: int = 5  # per account and address, within the lockout time
    login_lockout_minutes: int = 15
    signups_per_address_per_hour: int = 10
    address_failures: int = 30  # any accounts, one address
    account_failures: int = 100  # one account, any addresses
    mails_per_recipient_per_hour: int = 5  # password resets and invitations to one address
    mails_per_address_per_hour: int = 30  # such mails requested from one client address


def throttle_settings() -> ThrottleSettings:
    return overridden(ThrottleSettings(), settings.BRAIN_THROTTLE)


def login_limits() -> dict[str, Limit]:
    conf = throttle_settings()
    minutes = timedelta(minutes=conf.login_lockout_minutes)
    return {
        "login": Limit(failures=conf.login_max_failures, window=minutes, lockout=minutes),
        "ip": Limit(failures=conf.address_failures, window=minutes, lockout=minutes),
        "email": Limit(failures=conf.account_failures, window=minutes, lockout=minutes),
    }


def signup_limit() -> Limit:
    hour = timedelta(hours=1)
    return Limit(failures=throttle_settings().signups_per_address_per_hour, window=hour, lockout=hour)


def _email(email: str) -> str:
    return email.strip().lower()[:KEY_PART_MAX]


def login_keys(*, email: str, ip: str | None, browser: str | None = None) -> dict[str, Limit]:
    limits = login_limits()
    if browser:
        return {f"browser:{browser}"[:KEY_PART_MAX]: limits["login"]}
    keys = {f"email:{_email(email)}": limits["email"]}
    if ip:
        keys[f"login:{_email(email)}|{ip}"] = limits["login"]
        keys[f"ip:{ip}"] = limits["ip"]
    return keys


def _blocked_for(keys: list[str]) -> timedelta | None:
    now = timezone.now()
    locked = LoginThrottle.objects.filter(key__in=keys, locked_until__gt=now)
    until = max((row.locked_until for row in locked if row.locked_until), default=None)
    return until - now if until else None


def _count(keys: dict[str, Limit], now: datetime) -> None:
    for key, limit in sorted(keys.items()):  # a fixed order: two replicas never lock rows crosswise
        row, _ = LoginThrottle.objects.select_for_update().get_or_create(key=key, defaults={"window_started_at": now})
        if row.window_started_at <= now - limit.window:
            row.failures, row.window_started_at = 0, now
        row.failures += 1
        if limit.failures > 0 and row.failures >= limit.failures:
            row.locked_until = now + limit.lockout
        row.save()


def login_blocked_for(*, email: str, ip: str | None, browser: str | None = None) -> timedelta | None:
    """How long the caller must still wait, or None when a sign-in may be attempted now."""
    return _blocked_for(list(login_keys(email=email, ip=ip, browser=browser)))


@transaction.atomic
def login_failure_record(*, email: str, ip: str | None, browser: str | None = None) -> None:
    """Counts one failed sign-in under each key; a key reaching its limit is locked for its lockout time."""
    keys = login_keys(email=email, ip=ip, browser=browser)
    _count({key: limit for key, limit in keys.items() if limit.failures > 0}, timezone.now())


@transaction.atomic
def login_success_record(*, email: str, ip: str | None, browser: str | None = None) -> None:
    """A correct password clears this account's counter from this address, or this known browser's (the others
    keep counting)."""
    if browser:
        LoginThrottle.objects.filter(key=f"browser:{browser}"[:KEY_PART_MAX]).delete()
    elif ip:
        LoginThrottle.objects.filter(key=f"login:{_email(email)}|{ip}").delete()


def signup_blocked_for(*, ip: str | None) -> timedelta | None:
    """How long this address must wait before it may create another account, or None."""
    return _blocked_for([f"signup:{ip}"]) if ip else None


@transaction.atomic
def signup_record(*, ip: str | None) -> None:
    """Counts one account created from this address; the limit-th locks the address for the rest of the hour."""
    limit = signup_limit()
    if ip and limit.failures > 0:
        _count({f"signup:{ip}": limit}, timezone.now())


def _mail_keys(*, to: str, ip: str | None) -> dict[str, Limit]:
    conf, hour = throttle_settings(), timedelta(hours=1)
    keys = {f"mail-to:{_email(to)}": Limit(conf.mails_per_recipient_per_hour, hour, hour)}
    if ip:
        keys[f"mail-from:{ip}"] = Limit(conf.mails_per_address_per_hour, hour, hour)
    return {key: limit for key, limit in keys.items() if limit.failures > 0}


@transaction.atomic
def mail_allowed(*, to: str, ip: str | None) -> bool:
    """Counts one mail to `to` requested from `ip` and says whether it may go: False once the recipient or the
    address has had its hour's share (the limit-th mail still goes; the next ones wait for the hour's end)."""
    keys = _mail_keys(to=to, ip=ip)
    if _blocked_for(list(keys)) is not None:
        return False
    _count(keys, timezone.now())
    return True


def login_throttles_purge(*, now: datetime | None = None) -> int:
    """Deletes rows no longer locked whose window ended (nothing they count can lock anything again)."""
    now = now or timezone.now()
    longest = max([limit.window for limit in login_limits().values()] + [signup_limit().window])
    stale = LoginThrottle.objects.filter(window_started_at__lt=now - longest).exclude(locked_until__gt=now)
    deleted, _ = stale.delete()
    return deleted
