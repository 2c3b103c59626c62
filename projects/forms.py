"""HTML forms of the account, org and token pages. They validate input; services do the writes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils import timezone

from brain.addresses import client_address
from projects.known_browser import known_browser_id
from projects.models import ORG_NAME_MAX, TOKEN_LABEL_MAX, Membership, Project, User
from projects.services.signup import signup_pending_exists
from projects.services.throttle import login_blocked_for, login_failure_record, login_success_record

EXPIRY_CHOICES = [("", "Never"), ("7", "7 days"), ("30", "30 days"), ("90", "90 days"), ("365", "1 year")]


def client_ip(request: HttpRequest | None) -> str | None:
    # REMOTE_ADDR, or the X-Forwarded-For entry of a trusted proxy (BRAIN_TRUSTED_PROXY_HOPS).
    return client_address(request)


def retry_after_seconds(wait: timedelta) -> int:
    """The Retry-After value for a lockout: whole seconds, rounded up, never 0."""
    return max(1, -(-int(wait.total_seconds() * 1000) // 1000))


def wait_text(wait: timedelta) -> str:
    minutes = max(1, -(-int(wait.total_seconds()) // 60))  # rounded up: never "try in 0 minutes"
    until = (timezone.now() + wait).strftime("%H:%M UTC")
    return f"Try again in {minutes} minute(s) (after {until})"


class SignUpForm(forms.Form):
    email = forms.EmailField(max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password = forms.CharField(
        strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )

    def clean_email(self) -> str:
        email = self.cleaned_data["email"].strip().lower()
        if settings.SIGNUP_VERIFY_EMAIL and signup_pending_exists(email=email):
            return email  # signed up, never verified: signing up again sends a new link
        if User.objects.filter(email=email).exists():
            raise ValidationError("An account with this e-mail address exists already. Sign in instead.")
        return email

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("email") and data.get("password"):
            try:
                password_validation.validate_password(data["password"], User(email=data["email"]))
            except ValidationError as exc:
                self.add_error("password", exc)
        return data


class ThrottledMixin:
    """Refuses sign-in attempts while the account (from this address) or the address is locked out, or this
    known browser is, even with the right password; counts each failure (projects/services/throttle.py)."""

    request: HttpRequest | None
    cleaned_data: dict[str, Any]
    locked_for: timedelta | None = None  # set when refused by the throttle: the page answers 429 (views/signin.py)

    def clean(self) -> dict[str, Any]:
        email = (self.cleaned_data.get("username") or "").strip().lower()
        ip, browser = client_ip(self.request), known_browser_id(self.request, email=email)
        wait = login_blocked_for(email=email, ip=ip, browser=browser)
        if wait is not None:
            self.locked_for = wait
            raise ValidationError(f"Too many failed sign-ins. {wait_text(wait)}, or reset your password.",
                                  code="throttled")
        try:
            data: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            login_failure_record(email=email, ip=ip, browser=browser)
            raise
        login_success_record(email=email, ip=ip, browser=browser)
        return data


class ThrottledLoginForm(ThrottledMixin, AuthenticationForm):
    """The dashboard's sign-in form."""


class ThrottledAdminLoginForm(ThrottledMixin, AdminAuthenticationForm):
    """/admin/login/: the same throttle as the dashboard (one counter per account and address for both)."""


class TokenMintForm(forms.Form):
    label = forms.CharField(max_length=TOKEN_LABEL_MAX, help_text="Where the token is used, e.g. “work laptop”.")
    scope = forms.ChoiceField(
        choices=[], help_text="A project-scoped token sees and writes only that project."
    )
    expires_in_days = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, label="Expires")

    def __init__(self, *args: Any, projects: list[Project], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.projects = {str(p.pk): p for p in projects}
        choices = [("user", "All my projects (user scope)")]
        choices += [(pk, f"Only {p.name} ({p.org.name})") for pk, p in self.projects.items()]
        cast(forms.ChoiceField, self.fields["scope"]).choices = choices

    def project(self) -> Project | None:
        return self.projects.get(self.cleaned_data["scope"])

    def expires_at(self) -> Any:
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + timedelta(days=int(days)) if days else None


class OrgCreateForm(forms.Form):
    name = forms.CharField(max_length=ORG_NAME_MAX, label="Team name")


class InviteForm(forms.Form):
    email = forms.EmailField(max_length=254)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)
