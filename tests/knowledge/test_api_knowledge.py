"""REST /api/v1/knowledge: parity with the selectors and services the MCP tools use, scope and errors."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from knowledge.models import KnowledgeItem
from knowledge.scoring import Weights
from knowledge.selectors.live import knowledge_live
from knowledge.selectors.search import knowledge_search
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.teach import knowledge_teach
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

JSON = "application/json"


def _seed(tenant_a: Tenant, tenant_b: Tenant) -> dict[str, KnowledgeItem]:
    a = tenant_a.principal
    rows = {
        "pytest": knowledge_teach(principal=a, rule="Run pytest with -x when a test fails", type="reflex",
                                  tags=["Testing"], project_id=str(tenant_a.project.id)).item,
        "migrations": knowledge_teach(principal=a, rule="Never edit an applied Django migration",
                                      type="principle", project_id=str(tenant_a.project.id)).item,
        "personal": knowledge_create(owner=tenant_a.user, project=None,
                                     draft=KnowledgeDraft(content="Prefer tabs in Makefiles", type="reflex")),
        "bravo": knowledge_teach(principal=tenant_b.principal, rule="Run pytest quietly with -q", type="reflex",
                                 tags=["testing"]).item,
    }
    return rows


@pytest.mark.django_db
def test_list_matches_knowledge_live_for_each_principal(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _seed(tenant_a, tenant_b)
    for tenant in (tenant_a, tenant_b):
        for raw, principal in ((tenant.user_raw, tenant.principal), (tenant.project_raw, tenant.project_principal)):
            items = bearer(raw).get("/api/v1/knowledge").json()["items"]
            expected = knowledge_live(principal=principal).order_by("-created_at", "-id")
            assert [i["id"] for i in items] == [str(r.id) for r in expected]
    b_ids = {i["id"] for i in bearer(tenant_b.user_raw).get("/api/v1/knowledge").json()["items"]}
    assert b_ids == {str(rows["bravo"].id)}
    first = bearer(tenant_a.user_raw).get("/api/v1/knowledge?type=reflex&tag=testing").json()["items"]
    assert [(i["id"], i["rule"], i["isOwn"], i["confidence"]) for i in first] == [
        (str(rows["pytest"].id), "Run pytest with -x when a test fails", True, 1.0)]


@pytest.mark.django_db
def test_list_filters_pages_and_ranks_with_q(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _seed(tenant_a, tenant_b)
    client = bearer(tenant_a.user_raw)
    in_project = client.get(f"/api/v1/knowledge?projectId={tenant_a.project.id}").json()["items"]
    assert {i["id"] for i in in_project} == {str(rows["pytest"].id), str(rows["migrations"].id)}
    api_error(client.get(f"/api/v1/knowledge?projectId={tenant_b.project.id}"), 404, "NOT_FOUND")
    api_error(client.get(f"/api/v1/knowledge?projectId={uuid.uuid4()}"), 404, "NOT_FOUND")
    first = client.get("/api/v1/knowledge?limit=2").json()
    second = client.get(f"/api/v1/knowledge?limit=2&cursor={first['nextCursor']}").json()
    assert len(first["items"]) == 2 and second["nextCursor"] is None
    assert {i["id"] for i in first["items"] + second["items"]} == {
        str(rows[k].id) for k in ("pytest", "migrations", "personal")}
    ranked = client.get("/api/v1/knowledge?q=pytest%20failing%20test").json()
    # A list ranks like retrieval but without its per-type diversification.
    undiversified = dataclasses.replace(Weights.from_settings(), max_per_type=200)
    hits = knowledge_search(principal=tenant_a.principal, query="pytest failing test", limit=200,
                            weights=undiversified).hits
    assert [i["id"] for i in ranked["items"]] == [str(h.id) for h in hits] and ranked["nextCursor"] is None
    assert ranked["items"][0]["id"] == str(rows["pytest"].id)
    api_error(client.get("/api/v1/knowledge?type=nonsense"), 400, "VALIDATION")


@pytest.mark.django_db
def test_search_is_the_retrieval_engine_with_explain(tenant_a: Tenant, tenant_b: Tenant) -> None:
    _seed(tenant_a, tenant_b)
    for tenant in (tenant_a, tenant_b):
        for raw, principal in ((tenant.user_raw, tenant.principal), (tenant.project_raw, tenant.project_principal)):
            body = bearer(raw).get("/api/v1/knowledge/search?q=run%20pytest&limit=5").json()
            found = knowledge_search(principal=principal, query="run pytest", limit=5, explain=True)
            assert [(i["id"], i["score"]) for i in body["items"]] == [(str(h.id), h.score) for h in found.hits]
            assert body["retrieval"] == found.retrieval and body["items"]
            assert {"relevance", "multiplier", "score"} <= set(body["items"][0]["why"])
    quiet = bearer(tenant_a.user_raw).get("/api/v1/knowledge/search?q=pytest&explain=false").json()
    assert quiet["items"] and all(i["why"] == {} for i in quiet["items"])
    api_error(bearer(tenant_a.user_raw).get("/api/v1/knowledge/search?q="), 400, "VALIDATION")


@pytest.mark.django_db
def test_create_is_teach_and_respects_the_token_scope(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = bearer(tenant_a.project_raw)
    made = client.post("/api/v1/knowledge", {"rule": "Use ruff before committing", "type": "reflex",
                                             "tags": ["Lint"]}, content_type=JSON)
    assert made.status_code == 201, made.content
    body = made.json()
    row = KnowledgeItem.objects.get(id=body["id"])
    assert (row.project_id, row.confidence, row.tags, row.source) == (tenant_a.project.id, 1.0, ["lint"], "taught")
    again = client.post("/api/v1/knowledge", {"rule": "Use ruff and mypy before committing",
                                              "supersedesKnowledgeId": body["id"]}, content_type=JSON)
    assert again.json()["supersededId"] == body["id"]
    other = KnowledgeItem.objects.count()
    for raw, project in ((tenant_a.project_raw, tenant_b.project.id), (tenant_a.user_raw, tenant_b.project.id)):
        api_error(bearer(raw).post("/api/v1/knowledge", {"rule": "Leak this", "projectId": str(project)},
                                   content_type=JSON), 403, "FORBIDDEN_PROJECT")
    api_error(client.post("/api/v1/knowledge", {"rule": "x"}, content_type=JSON), 400, "VALIDATION")
    api_error(client.post("/api/v1/knowledge", {"rule": "An action", "type": "action_item", "tags": ["x"]},
                          content_type=JSON), 400, "VALIDATION")
    assert KnowledgeItem.objects.count() == other


@pytest.mark.django_db
def test_a_tag_over_its_cap_is_refused_and_the_schema_says_so(tenant_a: Tenant, tenant_b: Tenant) -> None:
    openapi = bearer(tenant_a.user_raw).get("/api/v1/openapi.json").json()
    for name in ("TeachIn", "KnowledgeUpdateIn"):
        tags = openapi["components"]["schemas"][name]["properties"]["tags"]
        items = tags["items"] if "items" in tags else next(t["items"] for t in tags["anyOf"] if "items" in t)
        assert items["maxLength"] == 120, (name, tags)
    client = bearer(tenant_a.user_raw)
    before = KnowledgeItem.objects.count()
    error = api_error(client.post("/api/v1/knowledge", {"rule": "Pin node to 20 in CI", "tags": ["ci", "t" * 121]},
                                  content_type=JSON), 400, "VALIDATION")
    assert error["details"]["fields"] == [{"field": "tags.1", "problem": "String should have at most 120 characters"}]
    mine = knowledge_teach(principal=tenant_a.principal, rule="Pin node to 20 in CI").item
    api_error(client.patch(f"/api/v1/knowledge/{mine.id}", {"tags": ["t" * 121]}, content_type=JSON), 400,
              "VALIDATION")
    assert KnowledgeItem.objects.count() == before + 1 and KnowledgeItem.objects.get(id=mine.id).tags == []
    api_error(bearer(tenant_b.user_raw).patch(f"/api/v1/knowledge/{mine.id}", {"tags": ["t" * 120]},
                                              content_type=JSON), 404, "NOT_FOUND")


@pytest.mark.django_db
def test_update_supersede_delete_and_their_scope(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _seed(tenant_a, tenant_b)
    client, url = bearer(tenant_a.user_raw), f"/api/v1/knowledge/{rows['pytest'].id}"
    changed = client.patch(url, {"rule": "Run pytest -x -q", "tags": ["speed"]}, content_type=JSON)
    assert changed.status_code == 200 and changed.json()["rule"] == "Run pytest -x -q"
    assert changed.json()["tags"] == ["speed"] and changed.json()["type"] == "reflex"
    for foreign in (rows["bravo"].id, uuid.uuid4()):  # someone else's and a missing one: the same answer
        api_error(client.get(f"/api/v1/knowledge/{foreign}"), 404, "NOT_FOUND")
        api_error(client.patch(f"/api/v1/knowledge/{foreign}", {"rule": "mine now"}, content_type=JSON),
                  404, "NOT_FOUND")
        api_error(client.post(f"/api/v1/knowledge/{foreign}/supersede", {"rule": "mine now"}, content_type=JSON),
                  404, "NOT_FOUND")
        api_error(client.delete(f"/api/v1/knowledge/{foreign}"), 404, "NOT_FOUND")
    scoped, personal = bearer(tenant_a.project_raw), f"/api/v1/knowledge/{rows['personal'].id}"
    # A project-scoped token's reads are narrowed to its project (the spec's matrix): personal rows are not there.
    api_error(scoped.get(personal), 404, "NOT_FOUND")
    api_error(scoped.patch(personal, {"rule": "Tabs everywhere"}, content_type=JSON), 404, "NOT_FOUND")
    api_error(scoped.delete(personal), 404, "NOT_FOUND")
    successor = client.post(f"{url}/supersede", {"rule": "Run pytest -x -q --lf"}, content_type=JSON)
    assert successor.status_code == 201 and successor.json()["supersededId"] == str(rows["pytest"].id)
    assert KnowledgeItem.objects.get(id=rows["pytest"].id).superseded_by_id == uuid.UUID(successor.json()["id"])
    api_error(client.get(url), 404, "NOT_FOUND")
    assert client.delete(f"/api/v1/knowledge/{successor.json()['id']}").status_code == 204
    ids = {i["id"] for i in client.get("/api/v1/knowledge").json()["items"]}
    assert ids == {str(rows["migrations"].id), str(rows["personal"].id)}
    bravo = KnowledgeItem.objects.get(id=rows["bravo"].id)
    assert bravo.deleted_at is None and bravo.content == "Run pytest quietly with -q"
    assert KnowledgeItem.objects.get(id=rows["personal"].id).content == "Prefer tabs in Makefiles"
