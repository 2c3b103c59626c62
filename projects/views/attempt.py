"""How an HTML view calls the core: a success can be flashed, and a business error is shown where the person
looks, on the form they sent or flashed above the page the view redirects to. Projects' and the dashboard's
views both use it (the dashboard sits above projects, so it lives here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from brain.errors import BrainError

T = TypeVar("T")


@dataclass(frozen=True)
class Refused:
    """The call raised a business error, already shown to the person (on the form, or flashed)."""

    error: BrainError


def attempt(
    request: HttpRequest, call: Callable[[], T], *, ok: str | Callable[[T], str] = "",
    form: forms.BaseForm | None = None, field: str | None = None,
) -> T | Refused:
    """Runs `call` (one service or selector call) and returns its result, flashing `ok` (a text, or a function of
    the result) as a success. A BrainError is added to `form` (the bound form the person sent; to `field`, or to
    the whole form) when a form is given, else flashed as an error; then `Refused` is returned. Any other
    exception goes on up."""
    try:
        result = call()
    except BrainError as exc:
        if form is not None:
            form.add_error(field, exc.message)
        else:
            messages.error(request, exc.message)
        return Refused(exc)
    if ok:
        messages.success(request, ok(result) if callable(ok) else ok)
    return result


V = TypeVar("V", bound=Callable[..., HttpResponseBase])


def login_required_to_act(view: V) -> V:
    """login_required for a POST-only action (delete, revoke, approve): a person whose session ran out is sent to
    sign in and then back to the page the button was on. With login_required they came back to the action's own
    URL by GET, and got a blank 405."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        page = request.META.get("HTTP_REFERER", "")
        same_site = url_has_allowed_host_and_scheme(page, allowed_hosts={request.get_host()})
        parts = urlsplit(page)
        back = parts.path + (f"?{parts.query}" if parts.query else "")
        return redirect_to_login(back if same_site and back else reverse("dash_home"))

    return cast("V", wrapped)
