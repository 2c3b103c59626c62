"""The two sign-in pages (/accounts/login/ and /admin/login/): a sign-in refused by the throttle answers
HTTP 429 with Retry-After, and the page is still the form, saying when to try again."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from projects.forms import ThrottledAdminLoginForm, retry_after_seconds
from projects.known_browser import known_browser_remember


def locked_answer(response: HttpResponseBase) -> HttpResponseBase:
    """429 + Retry-After when the rendered form was refused by the throttle (a wrong password stays 200:
    only a lockout is a rate limit, and a client must know how long to wait)."""
    form = (getattr(response, "context_data", None) or {}).get("form")
    wait = getattr(form, "locked_for", None)
    if wait is not None:
        response.status_code = 429
        response["Retry-After"] = str(retry_after_seconds(wait))
    return response


class SignInView(auth_views.LoginView):
    """The dashboard's sign-in page."""

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        locked_answer(response)
        return response

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_valid(form)
        known_browser_remember(self.request, response, user=form.get_user())
        return response


class BrainAdminSite(admin.AdminSite):
    """The admin with the dashboard's throttled sign-in (one set of counters for both pages)."""

    login_form = ThrottledAdminLoginForm

    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().login(request, extra_context)
        locked_answer(response)
        if request.method == "POST" and request.user.is_authenticated and response.status_code == 302:
            known_browser_remember(request, response, user=request.user)
        return response
