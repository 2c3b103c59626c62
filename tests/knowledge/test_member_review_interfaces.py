"""Member-rule review and attribution through each interface: REST (/orgs, /knowledge/review, approve, reject),
the dashboard (org settings, review page, teach) and MCP (teach's output unchanged, the injection names authors).
tenant_b is another org: it sees nothing and may change nothing."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.injection import TEAM_TITLE
from knowledge.models import KnowledgeItem, ReviewStatus
from projects.models import Org
from projects.services.orgs import org_review_set
from tests.conftest import Tenant
from tests.knowledge.team import Team, make_team
from tests.mcpgw.conftest import Mcp, call_tool
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db
RULE = "prefer model factories over hand written fixtures in tests"


@pytest.fixture
def team(tenant_a: Tenant) -> Team:
    return make_team(tenant_a)


def _patch(client: Client, slug: str, body: object) -> object:
    return client.patch(f"/api/v1/orgs/{slug}", json.dumps(body), content_type="application/json")


def test_rest_org_setting_is_for_owners(team: Team, tenant_a: Tenant, tenant_b: Tenant) -> None:
    slug = team.org.slug
    api_error(_patch(bearer(team.member_raw), slug, {"requireMemberReview": True}), 403, "FORBIDDEN_PROJECT")
    api_error(_patch(bearer(tenant_b.user_raw), slug, {"requireMemberReview": True}), 404, "NOT_FOUND")
    api_error(_patch(bearer(tenant_a.project_raw), slug, {"requireMemberReview": True}), 403, "FORBIDDEN_PROJECT")
    api_error(_patch(bearer(team.owner_raw), slug, {"requireMemberReview": 1}), 400, "VALIDATION")
    api_error(_patch(bearer(team.owner_raw), slug, {"requireMemberReview": True, "x": 1}), 400, "VALIDATION")
    assert Org.objects.get(pk=team.org.pk).require_member_review is False
    done = _patch(bearer(team.owner_raw), slug, {"requireMemberReview": True})
    assert done.status_code == 200, done.content  # type: ignore[attr-defined]
    assert done.json() == {"slug": slug, "name": "Delta Team", "personal": False, "role": "owner",  # type: ignore[attr-defined]
                           "requireMemberReview": True}
    seen = bearer(team.member_raw).get(f"/api/v1/orgs/{slug}").json()
    assert seen["requireMemberReview"] is True and seen["role"] == "member"
    assert slug not in [o["slug"] for o in bearer(tenant_b.user_raw).get("/api/v1/orgs").json()]


def test_rest_review_queue_approve_and_reject(team: Team, tenant_b: Tenant) -> None:
    org_review_set(user=team.owner.user, org=team.org, required=True)
    taught = bearer(team.member_raw).post("/api/v1/knowledge", {"rule": RULE, "projectId": str(team.project.id)},
                                          content_type="application/json")
    assert taught.status_code == 201 and taught.json()["reviewStatus"] == "pending"
    kid = taught.json()["id"]
    assert bearer(team.member_raw).get(f"/api/v1/knowledge/{kid}").json()["reviewStatus"] == "pending"
    api_error(bearer(team.owner_raw).get(f"/api/v1/knowledge/{kid}"), 404, "NOT_FOUND")
    queue = bearer(team.owner_raw).get("/api/v1/knowledge/review").json()
    assert [r["id"] for r in queue["items"]] == [kid]
    assert bearer(team.member_raw).get("/api/v1/knowledge/review").json()["items"] == []
    assert bearer(tenant_b.user_raw).get("/api/v1/knowledge/review").json()["items"] == []
    api_error(bearer(team.member_raw).post(f"/api/v1/knowledge/{kid}/approve"), 403, "FORBIDDEN_PROJECT")
    api_error(bearer(tenant_b.user_raw).post(f"/api/v1/knowledge/{kid}/approve"), 404, "NOT_FOUND")
    api_error(bearer(tenant_b.user_raw).post(f"/api/v1/knowledge/{kid}/reject"), 404, "NOT_FOUND")
    assert KnowledgeItem.objects.get(id=kid).review_status == ReviewStatus.PENDING
    approved = bearer(team.owner_raw).post(f"/api/v1/knowledge/{kid}/approve")
    assert approved.status_code == 200 and approved.json()["reviewStatus"] == "approved"
    found = bearer(team.owner_raw).get("/api/v1/knowledge/search", {"q": "factories fixtures",
                                                                    "projectId": str(team.project.id)}).json()
    assert [(h["id"], h["author"], h["confidence"]) for h in found["items"]] == [(kid, "Mo Member (mo)", 0.8)]
    assert bearer(tenant_b.user_raw).get("/api/v1/knowledge/search", {"q": "factories fixtures"}).json()["items"] == []
    api_error(bearer(team.owner_raw).post(f"/api/v1/knowledge/{kid}/reject"), 404, "NOT_FOUND")


def test_dashboard_toggle_and_review_page(client: Client, team: Team, tenant_b: Tenant) -> None:
    client.force_login(team.member.user)
    client.post(reverse("org_review_toggle", args=[team.org.slug]), {"require_member_review": "on"})
    assert Org.objects.get(pk=team.org.pk).require_member_review is False
    client.force_login(tenant_b.user)
    assert client.post(reverse("org_review_toggle", args=[team.org.slug]),
                       {"require_member_review": "on"}).status_code == 404
    client.force_login(team.owner.user)
    page = client.get(reverse("org_detail", args=[team.org.slug])).content.decode()
    assert "Review of members' rules" in page
    client.post(reverse("org_review_toggle", args=[team.org.slug]), {"require_member_review": "on"})
    assert Org.objects.get(pk=team.org.pk).require_member_review is True

    client.force_login(team.member.user)
    client.post(reverse("dash_knowledge_teach", args=[team.project.id]), {"rule": RULE, "type": "heuristic"})
    row = KnowledgeItem.objects.get(content=RULE)
    assert row.review_status == ReviewStatus.PENDING
    assert "waiting for an owner" in client.get(reverse("dash_knowledge", args=[team.project.id])).content.decode()
    decide = reverse("dash_member_rule_decide", args=[team.project.id, row.id])
    client.post(decide, {"decision": "approve"})  # a member may not approve
    assert KnowledgeItem.objects.get(id=row.id).review_status == ReviewStatus.PENDING

    client.force_login(team.owner.user)
    review = client.get(reverse("dash_review", args=[team.project.id])).content.decode()
    assert RULE in review and "taught by Mo Member (mo)" in review
    client.post(decide, {"decision": "approve"})
    assert KnowledgeItem.objects.get(id=row.id).review_status == ReviewStatus.APPROVED
    assert RULE not in client.get(reverse("dash_review", args=[team.project.id])).content.decode()


def test_mcp_teach_output_unchanged_and_start_names_the_author(client: Client, team: Team, tenant_b: Tenant) -> None:
    org_review_set(user=team.owner.user, org=team.org, required=True)
    member, owner = Mcp(client, team.member_raw), Mcp(client, team.owner_raw)
    taught = call_tool(member, "brain_teach_knowledge", {"rule": RULE, "projectId": str(team.project.id)})
    out = taught["structuredContent"]
    assert set(out) == {"id", "confidence", "projectId", "supersededId"} and out["confidence"] == 1.0
    start = {"prompt": "write tests with factories and fixtures", "projectId": str(team.project.id)}
    first = call_tool(owner, "brain_start_session", start)["structuredContent"]
    assert "relevantKnowledge" not in first  # pending: not injected into the owner's session
    mine = call_tool(member, "brain_start_session", start)["structuredContent"]
    assert out["id"] in mine["relevantKnowledge"]["knowledgeIds"]  # its author still gets it
    KnowledgeItem.objects.filter(id=out["id"]).update(review_status=ReviewStatus.APPROVED)
    after = call_tool(owner, "brain_start_session", start)["structuredContent"]["relevantKnowledge"]
    assert out["id"] in after["knowledgeIds"]
    text = after["injection"]
    assert TEAM_TITLE in text and "By: Mo Member (mo)" in text
    assert "What I've Learned About You" not in text  # the owner has no own rule here: no "about you" part
    other = call_tool(Mcp(client, tenant_b.user_raw), "brain_start_session", {"prompt": start["prompt"]})
    assert "relevantKnowledge" not in other["structuredContent"]
