"""A browser that has signed in to an account before carries a signed cookie naming that account (by a hash of
its address and password hash, never the address) and a random id of its own.

The account-wide failure ceiling (projects.services.throttle) is what stops guessing spread over many addresses,
but it also let anyone lock the owner out: a hundred wrong passwords from twenty addresses closed the account to
everyone for the lockout's length, again and again. An attempt from a browser that holds this account's cookie
is counted under that browser's own id instead of the account's and address's keys, so strangers' guesses
never lock it, and its own failures lock only itself. The cookie proves a past sign-in, not identity: it never
replaces the password, and a cookie of another account counts for nothing. It is also bound to the account's
password hash: a password change or reset (an owner taking back an account someone else opened) forgets every
browser known before it. (The "device cookie" design of the OWASP authentication cheat sheet.)
"""

from __future__ import annotations

import hashlib
import secrets

from django.core import signing
from django.http import HttpRequest, HttpResponseBase

from projects.models import User
from projects.selectors.accounts import password_stamp

COOKIE = "brain_known_browser"
MAX_AGE_S = 180 * 24 * 3600
_SALT = "projects.known_browser"


def _account(email: str, password: str) -> str:
    return hashlib.sha256(f"{email.strip().lower()}\0{password}".encode()).hexdigest()[:32]


def _held(request: HttpRequest | None) -> tuple[str, str] | None:
    """(account hash, browser id) of the well-signed, unexpired cookie the request carries, or None."""
    raw = request.COOKIES.get(COOKIE) if request is not None else None
    if not raw:
        return None
    try:
        value = signing.loads(raw, salt=_SALT, max_age=MAX_AGE_S)
    except signing.BadSignature:  # forged, altered or expired (SignatureExpired is a BadSignature)
        return None
    if not isinstance(value, dict) or not isinstance(value.get("a"), str) or not isinstance(value.get("b"), str):
        return None
    return value["a"], value["b"]


def known_browser_id(request: HttpRequest | None, *, email: str) -> str | None:
    """The browser's id when it carries a valid, unexpired cookie of the account with this address; else None."""
    held = _held(request)
    if held is None:
        return None
    stamp = password_stamp(email=email)  # read only for a browser that holds a well-signed cookie
    return held[1] if stamp and held[0] == _account(email, stamp) else None


def known_browser_remember(request: HttpRequest, response: HttpResponseBase, *, user: User) -> None:
    """Sets (or renews, keeping its id) the cookie after a successful sign-in to the account."""
    account, held = _account(user.email, user.password), _held(request)
    browser = held[1] if held is not None and held[0] == account else secrets.token_urlsafe(12)
    value = signing.dumps({"a": account, "b": browser}, salt=_SALT)
    response.set_cookie(COOKIE, value, max_age=MAX_AGE_S, httponly=True, secure=request.is_secure(),
                        samesite="Lax")
