"""System checks for a production-like configuration (run by every manage.py command, `check --deploy` too)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Warning as CheckWarning

CONSOLE_MAIL = "django.core.mail.backends.console.EmailBackend"


def production_like() -> bool:
    """DEBUG off and served to others: behind a TLS proxy, or announced at a public https URL."""
    public_https = str(settings.PUBLIC_URL).lower().startswith("https://")
    behind_proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None) is not None
    return not settings.DEBUG and (public_https or behind_proxy)


def console_mail_in_production(app_configs: Any = None, **kwargs: Any) -> list[CheckWarning]:
    """Mail printed to the console in production reaches no one, and it prints password-reset and invitation
    links (secrets that sign in as someone) into the logs."""
    if settings.EMAIL_BACKEND != CONSOLE_MAIL or not production_like():
        return []
    return [CheckWarning(
        "Mail goes to the console although this looks like a production setup (DEBUG off, https public URL "
        "or TLS proxy): password-reset and invitation e-mails reach no one, and their sign-in links are "
        "written into the logs.",
        hint="Set BRAIN_EMAIL_URL to your SMTP server, e.g. smtp+tls://user:password@smtp.example.com:587 "
             "(and BRAIN_EMAIL_FROM).",
        id="brain.W001",
    )]


def rate_limits_off_in_production(app_configs: Any = None, **kwargs: Any) -> list[CheckWarning]:
    """Rate limits count in Redis; a production setup without one has none (docs/hardening.md)."""
    if settings.RATE_LIMIT_REDIS_URL or not production_like():
        return []
    return [CheckWarning(
        "Request rate limits on /mcp and /api/v1 are off: they count in Redis and none is configured.",
        hint="Set REDIS_URL (or BRAIN_RATE_LIMIT_REDIS_URL) so every web replica shares the counts.",
        id="brain.W002",
    )]


def public_url_unreachable(app_configs: Any = None, **kwargs: Any) -> list[CheckWarning]:
    """Mailed links start with BRAIN_PUBLIC_URL; its default follows BRAIN_HOST, and a wildcard bind address
    (0.0.0.0, ::) is no address anyone can open."""
    try:
        host = urlsplit(str(settings.PUBLIC_URL)).hostname or ""
    except ValueError:
        host = ""
    if host and host not in {"0.0.0.0", "::"}:  # noqa: S104  (recognising a wildcard, not binding to one)
        return []
    return [CheckWarning(
        f"BRAIN_PUBLIC_URL={settings.PUBLIC_URL!r} is not an address people can open: password-reset, invitation "
        "and sign-up links in mail start with it.",
        hint="Set BRAIN_PUBLIC_URL to the address browsers use, e.g. http://192.168.1.20:8000 or https://brain.example.com.",
        id="brain.W003",
    )]
