"""Sign-up, sign-in with throttling, and Django's own password change/reset views on our templates."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from brain.addresses import public_link
from projects.forms import SignUpForm, client_ip, wait_text
from projects.services.accounts import user_create
from projects.services.throttle import signup_blocked_for, signup_record
from projects.views.attempt import Refused, attempt


def _safe_next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return target if target and ok else default


class PasswordResetView(auth_views.PasswordResetView):
    """Django's reset view; the mailed link starts with BRAIN_PUBLIC_URL, never with the request's Host."""

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        self.extra_email_context = {"public_url": public_link("")}
        return super().form_valid(form)


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("tokens")
    form = SignUpForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        wait = signup_blocked_for(ip=client_ip(request))
        if wait is not None:  # many accounts from one address: a script, not a person
            form.add_error(None, f"Too many accounts were created from your network address. {wait_text(wait)}.")
            status = 429
        else:
            user = attempt(request, lambda: user_create(
                email=form.cleaned_data["email"], password=form.cleaned_data["password"]), form=form)
            if not isinstance(user, Refused):
                signup_record(ip=client_ip(request))
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                messages.success(request, "Welcome! Mint a token below to connect your first agent.")
                return HttpResponseRedirect(_safe_next(request, str(reverse_lazy("tokens"))))
    context = {"form": form, "next": _safe_next(request, "")}
    return render(request, "accounts/signup.html", context, status=status)
