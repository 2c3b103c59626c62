"""The client's network address, as limits and throttles key it."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

ADDRESS_MAX = 64


def client_address(request: HttpRequest | None) -> str | None:
    """REMOTE_ADDR, or behind BRAIN_TRUSTED_PROXY_HOPS proxies the X-Forwarded-For entry the nearest trusted
    proxy saw. X-Forwarded-For is client-controlled except for the entries our own proxies appended, so only
    the N-th entry from the right is trusted (Caddy and ingress-nginx append the peer they saw)."""
    if request is None:
        return None
    remote = request.META.get("REMOTE_ADDR") or None
    hops = int(getattr(settings, "TRUSTED_PROXY_HOPS", 0))
    if hops <= 0:
        return remote[:ADDRESS_MAX] if remote else None
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    chosen = forwarded[-hops] if len(forwarded) >= hops else remote
    return chosen[:ADDRESS_MAX] if chosen else None


def public_link(path: str) -> str:
    """An absolute link to `path` on BRAIN_PUBLIC_URL, for mail: never built from the request's Host header,
    which a client chooses (a forged Host would send a reset link to the attacker's site)."""
    return f"{str(settings.PUBLIC_URL).rstrip('/')}{path}"
