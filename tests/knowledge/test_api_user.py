"""REST /api/v1/action-items and /api/v1/peer-card: parity with the MCP's selectors, scope and errors."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from knowledge.models import KnowledgeItem
from knowledge.selectors.live import peer_card_of
from knowledge.services.peer import peer_card_set
from knowledge.services.teach import knowledge_teach
from projects.scope import Principal
from projects.services.accounts import project_ensure_named
from sessions.services.open import action_items_open
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

JSON = "application/json"


def _item(principal: Principal, rule: str, *, email: str, project_id: uuid.UUID, blocker: bool = False) -> str:
    tags = ["action-item", f"for:{email}", *(["blocker"] if blocker else [])]
    return str(knowledge_teach(principal=principal, rule=rule, type="action_item", tags=tags,
                               project_id=str(project_id)).item.id)


@pytest.mark.django_db
def test_open_action_items_match_the_session_open_selector(tenant_a: Tenant, tenant_b: Tenant) -> None:
    a, other = tenant_a.principal, project_ensure_named(user=tenant_a.user, name="Side")[0]
    first = _item(a, "Write the release notes", email="alice@a.example", project_id=tenant_a.project.id)
    blocker = _item(a, "Fix the failing deploy", email="alice@a.example", project_id=tenant_a.project.id,
                    blocker=True)
    _item(a, "Review Carol's branch", email="carol@c.example", project_id=tenant_a.project.id)
    side = _item(a, "Rename the side project", email="alice@a.example", project_id=other.id)
    bravo = _item(tenant_b.principal, "Bravo's own task", email="bob@b.example", project_id=tenant_b.project.id)
    url = f"/api/v1/action-items?projectId={tenant_a.project.id}"
    for raw in (tenant_a.user_raw, tenant_a.project_raw):
        items = bearer(raw).get(url).json()["items"]
        expected = action_items_open(project=tenant_a.project, email="alice@a.example")
        assert [i["id"] for i in items] == [str(r.id) for r in expected] == [blocker, first]
        assert items[0]["blocker"] is True and items[0]["resolvedAt"] is None
    everywhere = bearer(tenant_a.user_raw).get("/api/v1/action-items").json()["items"]
    assert [i["id"] for i in everywhere] == [blocker, first, side]
    assert [i["id"] for i in bearer(tenant_a.project_raw).get("/api/v1/action-items").json()["items"]] == [
        blocker, first]
    api_error(bearer(tenant_a.project_raw).get(f"/api/v1/action-items?projectId={other.id}"), 404, "NOT_FOUND")
    assert [i["id"] for i in bearer(tenant_b.user_raw).get("/api/v1/action-items").json()["items"]] == [bravo]


@pytest.mark.django_db
def test_resolve_moves_an_item_to_resolved_within_scope(tenant_a: Tenant, tenant_b: Tenant) -> None:
    item = _item(tenant_a.principal, "Ship it", email="alice@a.example", project_id=tenant_a.project.id)
    bravo = _item(tenant_b.principal, "Bravo task", email="bob@b.example", project_id=tenant_b.project.id)
    client = bearer(tenant_a.project_raw)
    for foreign in (bravo, str(uuid.uuid4())):
        api_error(client.post(f"/api/v1/action-items/{foreign}/resolve"), 404, "NOT_FOUND")
    assert KnowledgeItem.objects.get(id=bravo).deleted_at is None
    done = client.post(f"/api/v1/action-items/{item}/resolve")
    assert done.status_code == 200 and done.json()["resolvedAt"]
    assert client.post(f"/api/v1/action-items/{item}/resolve").json()["resolvedAt"] == done.json()["resolvedAt"]
    assert client.get("/api/v1/action-items").json()["items"] == []
    assert [i["id"] for i in client.get("/api/v1/action-items?status=resolved").json()["items"]] == [item]
    assert action_items_open(project=tenant_a.project, email="alice@a.example") == []
    api_error(client.get("/api/v1/action-items?status=maybe"), 400, "VALIDATION")


@pytest.mark.django_db
def test_peer_card_read_and_replace(tenant_a: Tenant, tenant_b: Tenant) -> None:
    peer_card_set(user=tenant_b.user, facts={"editor": "emacs"})
    client = bearer(tenant_a.user_raw)
    empty = client.get("/api/v1/peer-card").json()
    card = peer_card_of(principal=tenant_a.principal)
    assert empty == {"email": card.email, "facts": card.facts, "updatedAt": None} and empty["facts"] == {}
    put = client.put("/api/v1/peer-card", {"facts": {"editor": "vim", "tone": "terse"}}, content_type=JSON)
    assert put.status_code == 200 and put.json()["facts"] == {"editor": "vim", "tone": "terse"}
    replaced = client.put("/api/v1/peer-card", {"facts": {"editor": "helix"}}, content_type=JSON).json()
    assert replaced["facts"] == peer_card_of(principal=tenant_a.principal).facts == {"editor": "helix"}
    scoped = bearer(tenant_a.project_raw)
    assert scoped.get("/api/v1/peer-card").json()["facts"] == {"editor": "helix"}
    api_error(scoped.put("/api/v1/peer-card", {"facts": {}}, content_type=JSON), 403, "FORBIDDEN_PROJECT")
    too_many = {f"k{n}": "v" for n in range(41)}
    api_error(client.put("/api/v1/peer-card", {"facts": too_many}, content_type=JSON), 400, "VALIDATION")
    api_error(client.put("/api/v1/peer-card", {"facts": {"a": 1}}, content_type=JSON), 400, "VALIDATION")
    assert peer_card_of(principal=tenant_a.principal).facts == {"editor": "helix"}
    assert bearer(tenant_b.user_raw).get("/api/v1/peer-card").json()["facts"] == {"editor": "emacs"}


@pytest.mark.django_db
def test_text_postgresql_cannot_store_is_refused_up_front(tenant_a: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    api_error(client.put("/api/v1/peer-card", {"facts": {"e\u0000": "vim"}}, content_type=JSON), 400, "VALIDATION")
    api_error(client.put("/api/v1/peer-card", '{"facts": {"a": "\\udcee"}}', content_type=JSON), 400, "VALIDATION")
    api_error(client.post("/api/v1/knowledge", {"rule": "nul \u0000 here"}, content_type=JSON), 400, "VALIDATION")
    api_error(client.get("/api/v1/knowledge/search?q=a%00b"), 400, "VALIDATION")
    api_error(client.post("/api/v1/projects", {"name": "a\u0000b"}, content_type=JSON), 400, "VALIDATION")
    api_error(client.post("/api/v1/tokens", {"label": "a\u0000b"}, content_type=JSON), 400, "VALIDATION")
    api_error(client.get("/api/v1/projects?q=a%00b"), 400, "VALIDATION")
    assert peer_card_of(principal=tenant_a.principal).facts == {} and not KnowledgeItem.objects.exists()


@pytest.mark.django_db
def test_browser_session_reads_freely_and_writes_with_csrf(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(tenant_a.user)
    assert client.get("/api/v1/action-items").json() == {"items": [], "nextCursor": None}
    api_error(client.put("/api/v1/peer-card", {"facts": {"editor": "vim"}}, content_type=JSON), 403, "CSRF_FAILED")
    client.get("/accounts/password/change/")  # a page with a form sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    ok = client.put("/api/v1/peer-card", {"facts": {"editor": "vim"}}, content_type=JSON, HTTP_X_CSRFTOKEN=csrf)
    assert ok.status_code == 200 and peer_card_of(principal=tenant_a.principal).facts == {"editor": "vim"}
    assert peer_card_of(principal=tenant_b.principal).facts == {}
