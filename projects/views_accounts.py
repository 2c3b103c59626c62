"""Sign-up, sign-in with throttling, and Django's own password change/reset views on our templates."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import path, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from brain.errors import BrainError
from projects.forms import SignUpForm, ThrottledLoginForm
from projects.services import user_create


def _safe_next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return target if target and ok else default


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("tokens")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = user_create(email=form.cleaned_data["email"], password=form.cleaned_data["password"])
        except BrainError as exc:
            form.add_error(None, exc.message)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome! Mint a token below to connect your first agent.")
            return HttpResponseRedirect(_safe_next(request, str(reverse_lazy("tokens"))))
    return render(request, "accounts/signup.html", {"form": form, "next": _safe_next(request, "")})


_T = "accounts/"
urlpatterns = [
    path("signup/", signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(
        template_name=_T + "login.html", authentication_form=ThrottledLoginForm, redirect_authenticated_user=True,
    ), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/change/", auth_views.PasswordChangeView.as_view(
        template_name=_T + "password_change.html", success_url=reverse_lazy("password_change_done"),
    ), name="password_change"),
    path("password/change/done/", auth_views.PasswordChangeDoneView.as_view(
        template_name=_T + "password_change_done.html",
    ), name="password_change_done"),
    path("password/reset/", auth_views.PasswordResetView.as_view(
        template_name=_T + "password_reset.html", email_template_name=_T + "password_reset_email.txt",
        subject_template_name=_T + "password_reset_subject.txt", success_url=reverse_lazy("password_reset_done"),
    ), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name=_T + "password_reset_sent.html",
    ), name="password_reset_done"),
    path("password/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name=_T + "password_reset_confirm.html", success_url=reverse_lazy("password_reset_complete"),
    ), name="password_reset_confirm"),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name=_T + "password_reset_done.html",
    ), name="password_reset_complete"),
]
