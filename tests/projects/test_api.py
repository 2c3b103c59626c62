"""REST API v1: bearer and session auth, scope rules shared with MCP, pagination, filters, errors."""

from __future__ import annotations

import pytest
from django.test import Client

from projects.models import ApiToken, Project
from projects.selectors.accounts import projects_visible, token_for_raw
from projects.services.accounts import project_ensure_named
from projects.services.orgs import org_create
from tests.conftest import Tenant
from tests.support.api import api_error, bearer


@pytest.mark.django_db
def test_projects_list_matches_the_selector_for_each_principal(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Parity: the API shows exactly what projects_visible (which the MCP tools use) returns."""
    project_ensure_named(user=tenant_a.user, name="Second")
    for tenant in (tenant_a, tenant_b):
        for raw, principal in ((tenant.user_raw, tenant.principal), (tenant.project_raw, tenant.project_principal)):
            items = bearer(raw).get("/api/v1/projects").json()["items"]
            assert [i["id"] for i in items] == [str(p.pk) for p in projects_visible(principal=principal)]
    items = bearer(tenant_a.user_raw).get("/api/v1/projects").json()["items"]
    assert {i["name"] for i in items} == {"Alpha App", "Second"} and all(i["isOwn"] for i in items)


@pytest.mark.django_db
def test_project_detail_hides_other_tenants_and_other_projects_of_a_scoped_token(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    ok = bearer(tenant_a.user_raw).get(f"/api/v1/projects/{tenant_a.project.pk}")
    assert ok.status_code == 200 and ok.json()["orgSlug"].startswith("personal-")
    api_error(bearer(tenant_a.user_raw).get(f"/api/v1/projects/{tenant_b.project.pk}"), 404, "NOT_FOUND")
    other, _ = project_ensure_named(user=tenant_a.user, name="Other")
    api_error(bearer(tenant_a.project_raw).get(f"/api/v1/projects/{other.pk}"), 404, "NOT_FOUND")
    api_error(bearer(tenant_a.user_raw).get("/api/v1/projects/not-a-uuid"), 400, "VALIDATION")


@pytest.mark.django_db
def test_create_project_is_idempotent_and_refused_to_scoped_tokens(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    first = client.post("/api/v1/projects", {"name": "Acme", "framework": "react"}, content_type="application/json")
    assert first.status_code == 201 and first.json()["created"] is True
    again = client.post("/api/v1/projects", {"name": "ACME"}, content_type="application/json")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert again.json()["framework"] == "react"
    refused = bearer(tenant_a.project_raw).post("/api/v1/projects", {"name": "X"}, content_type="application/json")
    err = api_error(refused, 403, "FORBIDDEN_PROJECT")
    assert "project-scoped" in err["message"]
    team = org_create(user=tenant_b.user, name="Bravo Team")
    api_error(client.post("/api/v1/projects", {"name": "Y", "orgId": str(team.pk)}, content_type="application/json"),
           404, "NOT_FOUND")
    in_team = bearer(tenant_b.user_raw).post(
        "/api/v1/projects", {"name": "Shared", "orgId": str(team.pk)}, content_type="application/json"
    )
    assert in_team.status_code == 201 and in_team.json()["isOwn"] is False
    assert not Project.objects.filter(name__in=["X", "Y"]).exists()


@pytest.mark.django_db
def test_validation_errors_use_the_envelope(tenant_a: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    err = api_error(client.post("/api/v1/projects", {"name": ""}, content_type="application/json"), 400, "VALIDATION")
    assert err["details"]["fields"][0]["field"] == "name"
    extra = client.post("/api/v1/projects", {"name": "a", "extra": 1}, content_type="application/json")
    api_error(extra, 400, "VALIDATION")
    api_error(client.post("/api/v1/projects", "not json", content_type="application/json"), 400, "VALIDATION")
    api_error(client.get("/api/v1/projects?cursor=garbage"), 400, "VALIDATION")
    api_error(client.delete("/api/v1/projects"), 405, "METHOD_NOT_ALLOWED")


@pytest.mark.django_db
def test_pagination_walks_every_row_once_and_filters_apply(tenant_a: Tenant, tenant_b: Tenant) -> None:
    for n in range(6):
        project_ensure_named(user=tenant_a.user, name=f"Page {n}")
    client, seen, cursor = bearer(tenant_a.user_raw), [], ""
    while True:
        body = client.get(f"/api/v1/projects?limit=2{'&cursor=' + cursor if cursor else ''}").json()
        assert len(body["items"]) <= 2
        seen += [i["name"] for i in body["items"]]
        if not body["nextCursor"]:
            break
        cursor = body["nextCursor"]
    assert seen == [p.name for p in projects_visible(principal=tenant_a.principal)] and len(seen) == 7
    filtered = client.get("/api/v1/projects?q=page%203").json()["items"]
    assert [i["name"] for i in filtered] == ["Page 3"]
    # Tenant B's cursor over A's rows shows B nothing of A: scope is applied before the cursor.
    b_items = bearer(tenant_b.user_raw).get(f"/api/v1/projects?cursor={cursor}").json()["items"]
    assert all(i["name"] == "Bravo App" for i in b_items)


@pytest.mark.django_db
def test_bad_or_missing_credentials_are_401(tenant_a: Tenant) -> None:
    api_error(Client().get("/api/v1/projects"), 401, "UNAUTHENTICATED")
    api_error(bearer("ebt_nope_nope").get("/api/v1/projects"), 401, "UNAUTHENTICATED")
    bearer(tenant_a.user_raw).post(f"/api/v1/tokens/{tenant_a.user_token.pk}/revoke")
    api_error(bearer(tenant_a.user_raw).get("/api/v1/projects"), 401, "UNAUTHENTICATED")


@pytest.mark.django_db
def test_session_auth_needs_csrf_for_writes(tenant_a: Tenant) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant_a.user)
    assert client.get("/api/v1/projects").status_code == 200
    api_error(client.post("/api/v1/projects", {"name": "Z"}, content_type="application/json"), 403, "CSRF_FAILED")
    client.get("/accounts/password/change/")  # any page with a form sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    ok = client.post("/api/v1/projects", {"name": "Z"}, content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert ok.status_code == 201


@pytest.mark.django_db
def test_tokens_mint_list_revoke(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    minted = client.post("/api/v1/tokens", {"label": "script", "projectId": str(tenant_a.project.pk)},
                         content_type="application/json")
    assert minted.status_code == 201
    body = minted.json()
    assert body["scope"] == "project" and token_for_raw(raw=body["token"]) is not None
    listed = client.get("/api/v1/tokens").json()["items"]
    assert [t["id"] for t in listed] == [str(t.pk) for t in ApiToken.objects.filter(user=tenant_a.user)]
    assert all("token" not in t for t in listed)
    assert [t["label"] for t in client.get("/api/v1/tokens?scope=project").json()["items"]] == ["script", "ci"]
    api_error(client.post("/api/v1/tokens", {"label": "x", "projectId": str(tenant_b.project.pk)},
                       content_type="application/json"), 404, "NOT_FOUND")
    api_error(client.post(f"/api/v1/tokens/{tenant_b.user_token.pk}/revoke"), 404, "NOT_FOUND")
    assert token_for_raw(raw=tenant_b.user_raw) is not None
    revoked = client.post(f"/api/v1/tokens/{body['id']}/revoke")
    assert revoked.status_code == 200 and revoked.json()["active"] is False
    assert token_for_raw(raw=body["token"]) is None
    assert [t["label"] for t in client.get("/api/v1/tokens?active=false").json()["items"]] == ["script"]


@pytest.mark.django_db
def test_project_scoped_tokens_cannot_manage_tokens(tenant_a: Tenant) -> None:
    client = bearer(tenant_a.project_raw)
    api_error(client.get("/api/v1/tokens"), 403, "FORBIDDEN_PROJECT")
    wider = client.post("/api/v1/tokens", {"label": "wider"}, content_type="application/json")
    api_error(wider, 403, "FORBIDDEN_PROJECT")
    assert not ApiToken.objects.filter(label="wider").exists()


def test_openapi_and_docs_are_served() -> None:
    schema = Client().get("/api/v1/openapi.json").json()
    assert {"/api/v1/projects", "/api/v1/tokens", "/api/v1/tokens/{token_id}/revoke"} <= set(schema["paths"])
    assert Client().get("/api/v1/docs").status_code == 200


def test_unknown_api_path_is_a_json_404() -> None:
    api_error(Client().get("/api/v1/nothing-here"), 404, "NOT_FOUND")
