"""Errors Django answers before or around the API's own handlers come in each interface's format: the envelope for any
path under /api (a refused Host, a path no route serves, a body over the upload limit read by the idempotency
wrapper, a cursor nested too deep), JSON on the health routes (which also answer HEAD), a JSON-RPC error on /mcp, and
Django's own page for the pages people read. The second tenant's rows never change."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import Client, RequestFactory

from knowledge.models import KnowledgeItem
from mcpgw.views import server_error
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db


def test_a_refused_host_gets_the_envelope_on_the_api_and_json_on_the_health_routes(tenant_a: Tenant) -> None:
    api = bearer(tenant_a.user_raw)
    api_error(api.get("/api/v1/projects", HTTP_HOST="evil.example.com"), 400, "VALIDATION")
    health = Client().get("/healthz", HTTP_HOST="evil.example.com")
    assert health.status_code == 400 and health.json()["status"] == "error"
    assert b"<html" not in Client().get("/readyz", HTTP_HOST="evil.example.com").content.lower()


def test_paths_no_route_serves_answer_in_their_interfaces_format(tenant_a: Tenant) -> None:
    api = bearer(tenant_a.user_raw)
    for path in ("/api/v2/projects", "/api/", "/api"):
        error = api_error(api.get(path), 404, "NOT_FOUND")
        assert "/api/v1/" in error["message"]
    health = Client().get("/healthz/")
    assert health.status_code == 404 and "without a trailing slash" in health.json()["error"]
    page = Client().get("/no-such-page")
    assert page.status_code == 404 and "text/html" in page["Content-Type"]  # a person's browser gets a page


def test_health_routes_answer_head_probes() -> None:
    assert Client().head("/healthz").status_code == 200
    assert Client().head("/readyz").status_code in (200, 503)


def test_a_body_over_the_limit_with_an_idempotency_key_gets_the_413_envelope(settings: Any, tenant_a: Tenant,
                                                                           tenant_b: Tenant) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"rule": "Always pin the versions " + "x" * 20_000})
    api = bearer(tenant_a.user_raw)
    response = api.post("/api/v1/knowledge", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k-big-1")
    error = api_error(response, 413, "VALIDATION")
    assert error["details"] == {"maxBytes": 10_000}
    assert not KnowledgeItem.objects.exists()  # neither tenant's


def test_a_cursor_nested_too_deep_is_refused_as_foreign(tenant_a: Tenant) -> None:
    cursor = base64.urlsafe_b64encode(b"[" * 100_000).decode().rstrip("=")
    error = api_error(bearer(tenant_a.user_raw).get(f"/api/v1/projects?cursor={cursor}"), 400, "VALIDATION")
    assert "cursor" in error["message"]


def test_what_escapes_every_handler_is_answered_in_the_paths_format() -> None:
    factory = RequestFactory()
    api = server_error(factory.get("/api/v1/projects"))
    assert api.status_code == 500 and json.loads(api.content)["error"]["code"] == "INTERNAL"
    mcp = json.loads(server_error(factory.post("/mcp")).content)
    assert mcp["jsonrpc"] == "2.0" and mcp["error"]["code"] == -32603
    assert b"<h1>Something went wrong on the server</h1>" in server_error(factory.get("/dashboard/")).content


def _multipart(boundary: str, rules: bytes) -> bytes:
    return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"project\"\r\n\r\nImported\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"CLAUDE.md\"\r\n"
            f"Content-Type: text/markdown\r\n\r\n").encode() + rules + f"\r\n--{boundary}--\r\n".encode()


def test_a_retried_upload_with_the_same_key_is_replayed_whatever_its_boundary(tenant_a: Tenant,
                                                                             tenant_b: Tenant) -> None:
    """A client draws a new multipart boundary for each send: the retry is the same request all the same."""
    api = bearer(tenant_a.user_raw)

    def send(boundary: str, rules: bytes) -> Any:
        return api.post("/api/v1/import", _multipart(boundary, rules),
                        content_type=f"multipart/form-data; boundary={boundary}", HTTP_IDEMPOTENCY_KEY="import-1")

    rules = b"# Rules\n- Always run the linter before committing.\n"
    first = send("first-boundary-1f2e", rules)
    assert first.status_code == 200, first.content
    again = send("other-boundary-9a8b", rules)
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    api_error(send("third-boundary-77aa", b"- Never push on Fridays.\n"), 409, "CONFLICT")  # other content
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_a_page_size_out_of_range_is_refused_not_bent(tenant_a: Tenant) -> None:
    api = bearer(tenant_a.user_raw)
    for path in ("/api/v1/projects", "/api/v1/knowledge", "/api/v1/sessions", "/api/v1/tokens"):
        for limit in (0, -3, 201):
            error = api_error(api.get(path, {"limit": limit}), 400, "VALIDATION")
            assert [f["field"] for f in error["details"]["fields"]] == ["limit"], (path, limit, error)
        assert api.get(path, {"limit": 200}).status_code == 200
