"""Login throttling against password guessing, counted in the database so every web replica agrees.

Two keys per attempt: the e-mail address (slows guessing one account from many addresses) and the
client IP (slows one client trying many accounts). Either key over its limit blocks the attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from projects.models import LoginThrottle


@dataclass(frozen=True)
class Limit:
    failures: int
    window: timedelta
    lockout: timedelta


EMAIL_LIMIT = Limit(failures=5, window=timedelta(minutes=15), lockout=timedelta(minutes=15))
IP_LIMIT = Limit(failures=30, window=timedelta(minutes=15), lockout=timedelta(minutes=15))


def throttle_keys(*, email: str, ip: str | None) -> dict[str, Limit]:
    keys = {f"email:{email.strip().lower()[:250]}": EMAIL_LIMIT}
    if ip:
        keys[f"ip:{ip[:64]}"] = IP_LIMIT
    return keys


def login_blocked_for(*, email: str, ip: str | None) -> timedelta | None:
    """How long the caller must still wait, or None when a sign-in may be attempted now."""
    now = timezone.now()
    locked = LoginThrottle.objects.filter(key__in=throttle_keys(email=email, ip=ip), locked_until__gt=now)
    until = max((row.locked_until for row in locked if row.locked_until), default=None)
    return until - now if until else None


@transaction.atomic
def login_failure_record(*, email: str, ip: str | None) -> None:
    """Counts one failed sign-in under each key; a key over its limit is locked for its lockout time."""
    now = timezone.now()
    for key, limit in throttle_keys(email=email, ip=ip).items():
        row, _ = LoginThrottle.objects.select_for_update().get_or_create(
            key=key, defaults={"window_started_at": now}
        )
        if row.window_started_at <= now - limit.window:
            row.failures, row.window_started_at = 0, now
        row.failures += 1
        if row.failures >= limit.failures:
            row.locked_until = now + limit.lockout
        row.save()


@transaction.atomic
def login_success_record(*, email: str) -> None:
    """A correct password clears the account's counter (the IP counter keeps counting)."""
    LoginThrottle.objects.filter(key__in=list(throttle_keys(email=email, ip=None))).delete()
