"""REST /api/v1/sessions and /api/v1/export: parity with the session selectors, scope, streaming export."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from knowledge.services.peer import peer_card_set
from knowledge.services.teach import knowledge_teach
from projects.models import ApiToken
from projects.services.accounts import project_ensure_named
from sessions.models import Session
from sessions.selectors.owned import sessions_owned
from tests.conftest import Tenant
from tests.support.api import api_error, bearer
from tests.support.closed_session import closed_session


def _sessions(tenant_a: Tenant, tenant_b: Tenant) -> dict[str, Session]:
    now, side = timezone.now(), project_ensure_named(user=tenant_a.user, name="Side")[0]
    return {
        "old": closed_session(user=tenant_a.user, project=tenant_a.project, prompt="set up CI",
                              ended_at=now - timedelta(days=3)),
        "new": closed_session(user=tenant_a.user, project=tenant_a.project, prompt="fix the login form",
                              events=[("error", "TypeError in views.py", {"file": "views.py"}),
                                      ("decision", "use django-allauth", {})], ended_at=now - timedelta(hours=1)),
        "side": closed_session(user=tenant_a.user, project=side, prompt="rename things", ended_at=now),
        "bravo": closed_session(user=tenant_b.user, project=tenant_b.project, prompt="bravo work", ended_at=now),
    }


@pytest.mark.django_db
def test_list_matches_sessions_owned_and_filters_apply(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _sessions(tenant_a, tenant_b)
    for tenant in (tenant_a, tenant_b):
        for raw, principal in ((tenant.user_raw, tenant.principal), (tenant.project_raw, tenant.project_principal)):
            items = bearer(raw).get("/api/v1/sessions").json()["items"]
            expected = sessions_owned(principal=principal).order_by("-started_at", "-id")
            assert [i["id"] for i in items] == [str(s.id) for s in expected]
    client = bearer(tenant_a.user_raw)
    assert [i["prompt"] for i in client.get("/api/v1/sessions").json()["items"]] == [
        "rename things", "fix the login form", "set up CI"]
    since = (timezone.now() - timedelta(days=1)).isoformat()
    window = client.get("/api/v1/sessions", {"since": since, "projectId": str(tenant_a.project.id)}).json()
    assert [i["id"] for i in window["items"]] == [str(rows["new"].id)]
    until = client.get("/api/v1/sessions", {"until": since}).json()["items"]
    assert [i["id"] for i in until] == [str(rows["old"].id)]
    first = client.get("/api/v1/sessions?limit=2").json()
    rest = client.get(f"/api/v1/sessions?limit=2&cursor={first['nextCursor']}").json()
    assert [i["id"] for i in first["items"] + rest["items"]] == [str(rows[k].id) for k in ("side", "new", "old")]
    api_error(client.get("/api/v1/sessions", {"since": since, "until": since}), 400, "VALIDATION")
    api_error(client.get(f"/api/v1/sessions?projectId={tenant_b.project.id}"), 404, "NOT_FOUND")
    api_error(bearer(tenant_a.project_raw).get(f"/api/v1/sessions?projectId={rows['side'].project_id}"),
              404, "NOT_FOUND")


@pytest.mark.django_db
def test_detail_has_events_and_hides_foreign_sessions(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _sessions(tenant_a, tenant_b)
    body = bearer(tenant_a.project_raw).get(f"/api/v1/sessions/{rows['new'].id}").json()
    assert body["prompt"] == "fix the login form" and body["success"] is True
    assert [(e["eventType"], e["content"]) for e in body["events"]] == [
        ("prompt", "fix the login form"), ("error", "TypeError in views.py"), ("decision", "use django-allauth")]
    assert body["events"][1]["payload"] == {"file": "views.py"}
    for raw, foreign in ((tenant_a.user_raw, rows["bravo"].id), (tenant_a.user_raw, uuid.uuid4()),
                         (tenant_a.project_raw, rows["side"].id), (tenant_b.user_raw, rows["new"].id)):
        api_error(bearer(raw).get(f"/api/v1/sessions/{foreign}"), 404, "NOT_FOUND")


def _export(raw: str) -> dict[str, Any]:
    response = bearer(raw).get("/api/v1/export")
    assert response.status_code == 200 and response.streaming
    assert "attachment" in response["Content-Disposition"]
    return dict(json.loads(response.getvalue()))


@pytest.mark.django_db
def test_export_holds_everything_the_user_owns_and_nothing_else(tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows = _sessions(tenant_a, tenant_b)
    peer_card_set(user=tenant_a.user, facts={"editor": "vim"})
    kept = knowledge_teach(principal=tenant_a.principal, rule="Keep migrations small").item
    gone = knowledge_teach(principal=tenant_a.principal, rule="An old rule that was deleted").item
    bearer(tenant_a.user_raw).delete(f"/api/v1/knowledge/{gone.id}")
    knowledge_teach(principal=tenant_b.principal, rule="Bravo's secret rule")
    doc = _export(tenant_a.user_raw)
    assert doc["format"] == "external-brain-export/2" and doc["user"]["email"] == "alice@a.example"
    assert doc["peerCard"]["facts"] == {"editor": "vim"}
    assert {p["name"] for p in doc["projects"]} == {"Alpha App", "Side"}
    assert {t["id"] for t in doc["tokens"]} == {str(t.id) for t in ApiToken.objects.filter(user=tenant_a.user)}
    text = json.dumps(doc)
    assert all(t.digest not in text for t in ApiToken.objects.all()) and "Bravo" not in text
    by_id = {k["id"]: k for k in doc["knowledge"]}
    assert set(by_id) == {str(kept.id), str(gone.id)} and by_id[str(gone.id)]["deletedAt"]
    assert [s["id"] for s in doc["sessions"]] == [str(rows[k].id) for k in ("old", "new", "side")]
    assert [e["eventType"] for e in doc["sessions"][1]["events"]] == ["prompt", "error", "decision"]
    assert [s["prompt"] for s in _export(tenant_b.user_raw)["sessions"]] == ["bravo work"]
    api_error(bearer(tenant_a.project_raw).get("/api/v1/export"), 403, "FORBIDDEN_PROJECT")
