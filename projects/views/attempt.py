"""How an HTML view calls the core: a success can be flashed, and a business error is shown where the person
looks, on the form they sent or flashed above the page the view redirects to. Projects' and the dashboard's
views both use it (the dashboard sits above projects, so it lives here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django import forms
from django.contrib import messages
from django.http import HttpRequest

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
