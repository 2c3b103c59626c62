"""Helpers for REST API tests: a bearer client and an error-envelope assertion."""

from __future__ import annotations

from typing import Any

from django.test import Client


def bearer(raw: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def api_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """Asserts the one error envelope with `code` and returns its body."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]
    return dict(body["error"])
