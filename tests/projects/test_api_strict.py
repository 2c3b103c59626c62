"""The REST schemas say what the server enforces: a number is not a boolean, a date-time is not a number,
and string fields declare the NUL rule."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from knowledge.models import KnowledgeItem
from knowledge.services.teach import knowledge_teach
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db


def test_confidence_must_be_a_number(tenant_a: Tenant, tenant_b: Tenant) -> None:
    item = knowledge_teach(principal=tenant_a.principal, rule="pin the node version").item
    for bad in (False, True, "0.5"):
        err = api_error(bearer(tenant_a.user_raw).patch(f"/api/v1/knowledge/{item.id}", {"confidence": bad},
                                                        content_type="application/json"), 400, "VALIDATION")
        assert err["details"]["fields"][0]["field"] == "confidence"
    assert KnowledgeItem.objects.get(id=item.id).confidence == 1.0
    ok = bearer(tenant_a.user_raw).patch(f"/api/v1/knowledge/{item.id}", {"confidence": 0},
                                         content_type="application/json")
    assert ok.status_code == 200 and ok.json()["confidence"] == 0.0
    api_error(bearer(tenant_b.user_raw).patch(f"/api/v1/knowledge/{item.id}", {"confidence": 0.5},
                                              content_type="application/json"), 404, "NOT_FOUND")


def test_date_times_are_iso_strings(tenant_a: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    for bad in ("0.5", "1700000000", "yesterday"):
        api_error(client.get("/api/v1/sessions", {"until": bad}), 400, "VALIDATION")
    assert client.get("/api/v1/sessions", {"until": "2030-01-01T00:00:00Z"}).status_code == 200
    api_error(client.post("/api/v1/tokens", {"label": "x", "expiresAt": 4102444800},
                          content_type="application/json"), 400, "VALIDATION")


def test_string_fields_declare_the_nul_rule() -> None:
    schemas = Client().get("/api/v1/openapi.json").json()["components"]["schemas"]
    rule = schemas["TeachIn"]["properties"]["rule"]
    assert rule["pattern"] == "^[^\\u0000]*$"
    update = schemas["KnowledgeUpdateIn"]["properties"]
    assert all(branch.get("pattern") == "^[^\\u0000]*$" for branch in update["trigger"]["anyOf"]
               if branch.get("type") == "string")


def test_an_org_path_no_slug_can_have_is_not_found(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """GET /api/v1/orgs/%00 reached PostgreSQL, which refuses NUL in text: 500 (found by the CI fuzz suite)."""
    client = bearer(tenant_a.user_raw)
    for bad in ("%00", "a%00b", "%C3%A9quipe", "x" * 300, "%20"):
        api_error(client.get(f"/api/v1/orgs/{bad}"), 404, "NOT_FOUND")
        api_error(client.patch(f"/api/v1/orgs/{bad}", {"requireMemberReview": True},
                               content_type="application/json"), 404, "NOT_FOUND")
    own = tenant_a.project.org.slug
    assert client.get(f"/api/v1/orgs/{own}").json()["slug"] == own
    api_error(bearer(tenant_b.user_raw).get(f"/api/v1/orgs/{own}"), 404, "NOT_FOUND")


def test_the_api_root_and_unknown_paths_answer_the_error_envelope(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """/api/v1/ itself was ninja's root view, which raised Http404: Django's HTML page."""
    for client in (bearer(tenant_a.user_raw), Client()):
        for path in ("/api/v1/", "/api/v1/no-such-thing"):
            body = api_error(client.get(path), 404, "NOT_FOUND")
            assert "/api/v1/docs" in json.dumps(body)
            api_error(client.post(path, {}, content_type="application/json"), 404, "NOT_FOUND")
    schema = Client().get("/api/v1/openapi.json")  # the schema still finds the API's root by name
    assert schema.status_code == 200 and "/api/v1/sessions" in json.dumps(schema.json()["paths"])
