"""Sign-up, sign-in with throttling, and Django's own password change/reset views on our templates."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm, SetPasswordForm
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from brain.addresses import public_link
from brain.errors import ValidationFailed
from brain.logs import log_op
from projects.forms import SignUpForm, client_ip, retry_after_seconds, wait_text
from projects.models import User
from projects.services.accounts import user_create
from projects.services.signup import mailbox_proven, signup_link_parts, user_signup_pending, user_verify
from projects.services.throttle import mail_allowed, signup_blocked_for, signup_record
from projects.views.attempt import Refused, attempt
from projects.views.mail import mail_sent

logger = logging.getLogger(__name__)


def _safe_next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return target if target and ok else default


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset view; the mailed link starts with BRAIN_PUBLIC_URL, never with the request's Host."""

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        self.extra_email_context = {"public_url": public_link("")}
        email, address = form.cleaned_data["email"], client_ip(self.request)
        if not mail_allowed(to=email, ip=address):
            # The page reads the same either way: it never says whether an account exists, nor that a mail waits.
            log_op(logger, "accounts.reset_mail_throttled", to=email.split("@")[-1], address=address)
            return HttpResponseRedirect(self.get_success_url())
        return super().form_valid(form)


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's reset confirmation. Using the mailed link proves the address, which ends a squatter's tokens on an
    account nobody had confirmed (`mailbox_proven`); the new password and the revocation commit together."""

    def form_valid(self, form: SetPasswordForm) -> HttpResponse:
        with transaction.atomic():
            response = super().form_valid(form)
            revoked = mailbox_proven(user=form.user)
        if revoked:
            log_op(logger, "accounts.unconfirmed_tokens_revoked", user=str(form.user.pk), tokens=revoked)
            messages.warning(self.request, f"Your address is now confirmed. {revoked} API token(s) minted before "
                             "it was confirmed were revoked: mint new ones in Settings > Tokens for your agents.")
        return response


def _send_signup_link(user: User) -> bool:
    uidb64, token = signup_link_parts(user=user)
    link = public_link(reverse("signup_verify", args=[uidb64, token]))
    body = render_to_string("accounts/signup_verify_email.txt", {"email": user.email, "link": link})
    return mail_sent(subject="Confirm your External Brain account", body=body, to=user.email, purpose="signup")


def _create(request: HttpRequest, form: SignUpForm) -> HttpResponse | None:
    """Creates the account (pending its e-mail link when BRAIN_SIGNUP_VERIFY_EMAIL is on); None if refused."""
    email, password = form.cleaned_data["email"], form.cleaned_data["password"]
    if settings.SIGNUP_VERIFY_EMAIL:
        pending = attempt(request, lambda: user_signup_pending(email=email, password=password), form=form)
        if isinstance(pending, Refused):
            return None
        signup_record(ip=client_ip(request))
        if not _send_signup_link(pending):  # the pending account stays: signing up again sends a new link
            form.add_error(None, "The confirmation mail could not be sent just now; sign up again in a few "
                                 "minutes to get a new link.")
            return None
        return render(request, "accounts/signup_sent.html", {"email": pending.email})
    user = attempt(request, lambda: user_create(email=email, password=password, confirmed=False), form=form)
    if isinstance(user, Refused):
        return None
    signup_record(ip=client_ip(request))
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, "Welcome! Mint a token below to connect your first agent.")
    return HttpResponseRedirect(_safe_next(request, str(reverse_lazy("tokens"))))


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("tokens")
    form = SignUpForm(request.POST or None)
    wait = None
    if request.method == "POST" and form.is_valid():
        wait = signup_blocked_for(ip=client_ip(request))
        if wait is not None:  # many accounts from one address: a script, not a person
            form.add_error(None, f"Too many accounts were created from your network address. {wait_text(wait)}.")
        else:
            created = _create(request, form)
            if created is not None:
                return created
    context = {"form": form, "next": _safe_next(request, "")}
    response = render(request, "accounts/signup.html", context, status=200 if wait is None else 429)
    if wait is not None:
        response["Retry-After"] = str(retry_after_seconds(wait))
    return response


@require_http_methods(["GET", "POST"])
def signup_verify(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """GET shows a button (mail scanners that follow links must not activate anything); POST activates."""
    if request.method == "GET":
        return render(request, "accounts/signup_verify.html", {})
    try:
        user = user_verify(uidb64=uidb64, token=token)
    except ValidationFailed:  # the page says what to do; nothing was changed
        return render(request, "accounts/signup_verify.html", {"failed": True}, status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, "Your address is confirmed. Mint a token below to connect your first agent.")
    return redirect("tokens")
