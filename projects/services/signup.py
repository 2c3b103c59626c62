"""Sign-up with e-mail verification (BRAIN_SIGNUP_VERIFY_EMAIL=true): the account stays inactive, so it cannot
sign in, until the link mailed to its address is used. The link is single-use (it is signed over the
account's active flag and password hash, so activating it, or signing up again, voids it) and expires with
PASSWORD_RESET_TIMEOUT (3 days).

Without verification anyone can open an account under somebody else's address and mint tokens. When the
address's owner later takes the account over with a password reset by mail, `mailbox_proven` revokes every
token minted before that moment, so the squatter's agents lose it on their next call (their browser sessions
already die with the password)."""

from __future__ import annotations

from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from brain.errors import ValidationFailed
from projects.models import ApiToken, AuditAction, User
from projects.services.accounts import password_check, user_create
from projects.services.audit import audit_record

EXPIRED = "this sign-up link is invalid, used or expired: sign up again with the same address for a new one"


class _SignupTokens(PasswordResetTokenGenerator):
    key_salt = "projects.services.signup.verify"

    def _make_hash_value(self, user: User, timestamp: int) -> str:  # type: ignore[override]
        return f"{user.pk}{user.is_active}{user.password}{timestamp}"


SIGNUP_TOKENS = _SignupTokens()


def _pending(email: str) -> User | None:
    """An account that signed up and never verified (never signed in either)."""
    return User.objects.select_for_update().filter(email=email, is_active=False, last_login__isnull=True).first()


def signup_pending_exists(*, email: str) -> bool:
    return User.objects.filter(email=email.strip().lower(), is_active=False, last_login__isnull=True).exists()


@transaction.atomic
def user_signup_pending(*, email: str, password: str) -> User:
    """An inactive account awaiting its link: created, or, signed up again before verifying, given the new
    password (the mailbox owner's last sign-up wins; earlier links die with the old password hash)."""
    email = (email or "").strip().lower()
    user = _pending(email)
    if user is None:
        user = user_create(email=email, password=password, confirmed=False)
        User.objects.filter(pk=user.pk).update(is_active=False)
        user.is_active = False
        return user
    password_check(password=password, email=email)
    user.set_password(password)
    user.save(update_fields=["password"])
    return user


def signup_link_parts(*, user: User) -> tuple[str, str]:
    """(uidb64, token) of the verification link for this pending account."""
    return urlsafe_base64_encode(force_bytes(user.pk)), SIGNUP_TOKENS.make_token(user)


@transaction.atomic
def user_verify(*, uidb64: str, token: str) -> User:
    """Activates the pending account the link names, or raises VALIDATION (unknown, used, expired)."""
    try:
        pk = force_str(urlsafe_base64_decode(uidb64))
        user = User.objects.select_for_update().filter(pk=pk, is_active=False).first()
    except (ValueError, TypeError, OverflowError, DjangoValidationError):  # a mangled link: not base64, not a UUID
        user = None
    if user is None or not SIGNUP_TOKENS.check_token(user, token):
        raise ValidationFailed(EXPIRED)
    user.is_active, user.email_confirmed_at = True, timezone.now()
    user.save(update_fields=["is_active", "email_confirmed_at"])
    return user


@transaction.atomic
def mailbox_proven(*, user: User) -> int:
    """The address's owner has just used a link mailed to it. On an account nobody had confirmed, revokes every
    token minted before now (whoever typed the address may hold them) and marks the address confirmed; a
    confirmed account keeps its tokens. Returns how many were revoked."""
    user = User.objects.select_for_update().get(pk=user.pk)
    if user.email_confirmed_at is not None:
        return 0
    now = timezone.now()
    tokens = list(ApiToken.objects.filter(user=user, revoked_at__isnull=True).select_related("project"))
    ApiToken.objects.filter(pk__in=[token.pk for token in tokens]).update(revoked_at=now, updated_at=now)
    for token in tokens:
        audit_record(actor=user, action=AuditAction.TOKEN_REVOKED, project=token.project,
                     target=f"token:{token.prefix}", summary="minted before the address was confirmed by mail")
    user.email_confirmed_at = now
    user.save(update_fields=["email_confirmed_at"])
    return len(tokens)
