"""`attempt`, the one way HTML views call the core: success flashed, a business error flashed or put on the form."""

from __future__ import annotations

import pytest
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest
from django.test import RequestFactory

from brain.errors import NotFound
from projects.forms import OrgCreateForm
from projects.views.attempt import Refused, attempt


def _request() -> HttpRequest:
    request = RequestFactory().post("/")
    request._messages = CookieStorage(request)  # type: ignore[attr-defined]
    return request


def _flashed(request: HttpRequest) -> list[tuple[str, str]]:
    return [(m.level_tag, m.message) for m in request._messages]  # type: ignore[attr-defined]


def _refuse() -> int:
    raise NotFound("no such org")


def test_a_success_returns_the_result_and_flashes_ok() -> None:
    request = _request()
    assert attempt(request, lambda: None, ok="Revoked.") is None  # a call that returns nothing still succeeded
    assert attempt(request, lambda: 7, ok=lambda n: f"{n} rows") == 7
    assert attempt(request, lambda: 8) == 8  # no text: nothing flashed
    assert _flashed(request) == [("success", "Revoked."), ("success", "7 rows")]


def test_a_business_error_is_flashed_without_a_form() -> None:
    request = _request()
    refused = attempt(request, _refuse, ok="never shown")
    assert isinstance(refused, Refused) and refused.error.code == "NOT_FOUND" and refused.error.http_status == 404
    assert _flashed(request) == [("error", "no such org")]


def test_a_business_error_goes_on_the_form_or_its_field() -> None:
    request = _request()
    whole, field = OrgCreateForm({"name": "Acme"}), OrgCreateForm({"name": "Acme"})
    assert whole.is_valid() and field.is_valid()
    assert isinstance(attempt(request, _refuse, form=whole), Refused)
    assert isinstance(attempt(request, _refuse, form=field, field="name"), Refused)
    assert whole.non_field_errors() == ["no such org"] and field.errors == {"name": ["no such org"]}
    assert _flashed(request) == []


def test_other_exceptions_go_on_up() -> None:
    with pytest.raises(ZeroDivisionError):
        attempt(_request(), lambda: 1 // 0, ok="never")
