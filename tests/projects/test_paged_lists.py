"""The token list (page and API) and an org's member list come in pages: walking every page shows each row once, in
order, even among rows created in the same instant; a crafted page number answers a page, a crafted cursor the API's
error; the other tenant's rows never appear. (Both pages listed every row at once.)"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from projects.models import ApiToken, Membership, User
from projects.selectors.accounts import TOKENS_PAGE
from projects.selectors.orgs import MEMBERS_PAGE
from projects.services.accounts import token_create, token_revoke
from projects.services.orgs import org_create
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db

BAD_PAGES = ("abc", "-3", "0", "", "1.5", "%00", "99999999999999999999", "9" * 5000)


def _client(tenant: Tenant) -> Client:
    client = Client()
    client.force_login(tenant.user)
    return client


def _walk(client: Client, url: str, pattern: str, later: str) -> list[str]:
    """Every row matching `pattern` on page 1, 2, … for as long as the page links to a later one."""
    seen: list[str] = []
    for page in range(1, 50):
        html = client.get(f"{url}?page={page}").content.decode()
        seen += re.findall(pattern, html)
        if later not in html:
            return seen
    raise AssertionError("the pages never ended")


@pytest.fixture
def many_tokens(settings: Any, tenant_a: Tenant) -> list[str]:
    """2.5 pages of tenant A's tokens, newest first (as expected on the page), a run of them minted in one instant;
    half are revoked, which is how a list outgrows the cap on usable tokens."""
    settings.MAX_TOKENS_PER_USER = 1000
    for n in range(TOKENS_PAGE * 5 // 2 - 2):
        token, _ = token_create(user=tenant_a.user, label=f"tok-{n}")
        if n % 2:
            token_revoke(user=tenant_a.user, token_id=token.pk)
    tied = ApiToken.objects.filter(user=tenant_a.user).order_by("created_at")[TOKENS_PAGE - 5:TOKENS_PAGE + 5]
    ApiToken.objects.filter(pk__in=[t.pk for t in tied]).update(created_at=timezone.now())
    rows = sorted(ApiToken.objects.filter(user=tenant_a.user), key=lambda t: (t.created_at, t.pk), reverse=True)
    return [t.prefix for t in rows]


def test_the_tokens_page_walks_every_token_once_newest_first(many_tokens: list[str], tenant_a: Tenant,
                                                            tenant_b: Tenant) -> None:
    pattern = r"<code>(ebt_[0-9a-f]+)…</code>"
    client = _client(tenant_a)
    first = client.get("/settings/tokens").content.decode()
    assert len(re.findall(pattern, first)) == TOKENS_PAGE and "Older →" in first and "Newer" not in first
    assert _walk(client, "/settings/tokens", pattern, "Older →") == many_tokens
    last = client.get("/settings/tokens?page=3").content.decode()
    assert "← Newer" in last and "Older" not in last
    b_prefixes = {tenant_b.user_token.prefix, tenant_b.project_token.prefix}
    assert not b_prefixes & set(many_tokens)
    assert _walk(_client(tenant_b), "/settings/tokens", pattern, "Older →") == [
        t.prefix for t in ApiToken.objects.filter(user=tenant_b.user).order_by("-created_at", "-id")]


def test_a_crafted_tokens_page_number_answers_a_page(many_tokens: list[str], tenant_a: Tenant,
                                                     tenant_b: Tenant) -> None:
    client = _client(tenant_a)
    first = re.findall(r"<code>(ebt_[0-9a-f]+)…</code>", client.get("/settings/tokens").content.decode())
    for bad in BAD_PAGES:
        response = client.get(f"/settings/tokens?page={bad}")
        assert response.status_code == 200, bad
        shown = re.findall(r"<code>(ebt_[0-9a-f]+)…</code>", response.content.decode())
        assert shown in (first, []), bad  # the first page, or past the end: none, and a link back
    assert "No tokens this far back." in client.get("/settings/tokens?page=9").content.decode()


def test_the_tokens_api_walks_every_token_once_and_refuses_a_crafted_cursor(many_tokens: list[str],
                                                                             tenant_a: Tenant,
                                                                             tenant_b: Tenant) -> None:
    client, seen, cursor = bearer(tenant_a.user_raw), [], ""
    while True:
        body = client.get(f"/api/v1/tokens?limit=7{'&cursor=' + cursor if cursor else ''}").json()
        seen += [t["prefix"] for t in body["items"]]
        if not body["nextCursor"]:
            break
        cursor = body["nextCursor"]
    assert seen == many_tokens
    for bad in ("garbage", "-1", "WyJ4Il0", "W10"):
        assert "cursor" in api_error(client.get(f"/api/v1/tokens?cursor={bad}"), 400, "VALIDATION")["message"]
    nul = api_error(client.get("/api/v1/tokens?cursor=%00"), 400, "VALIDATION")
    assert [f["field"] for f in nul["details"]["fields"]] == ["cursor"]
    api_error(client.get("/api/v1/tokens?limit=-1"), 400, "VALIDATION")
    # A cursor of A's list, replayed by B, pages over B's tokens only: the scope is applied before the cursor.
    b_seen = [t["prefix"] for t in bearer(tenant_b.user_raw).get(f"/api/v1/tokens?cursor={cursor}").json()["items"]]
    assert not set(b_seen) & set(many_tokens)


@pytest.fixture
def team(tenant_a: Tenant) -> tuple[str, list[str]]:
    """Tenant A's team org with 2.5 pages of members; its slug and the member e-mails in page order."""
    org = org_create(user=tenant_a.user, name="Crowd")
    users = User.objects.bulk_create([User(email=f"m{n:03d}@crowd.example") for n in range(MEMBERS_PAGE * 5 // 2)])
    Membership.objects.bulk_create([Membership(org=org, user=u, role=Membership.Role.MEMBER) for u in users])
    rows = sorted(Membership.objects.filter(org=org).select_related("user"),
                  key=lambda m: (m.role, m.user.email, m.pk))
    return org.slug, [m.user.email for m in rows]


MEMBER = r"<td>([^<>\s]+@[^<>\s]+)</td><td>(?:Owner|Member)</td>"


def test_the_members_list_walks_every_member_once(team: tuple[str, list[str]], tenant_a: Tenant,
                                                  tenant_b: Tenant) -> None:
    slug, emails = team
    client = _client(tenant_a)
    first = client.get(f"/orgs/{slug}/").content.decode()
    assert len(re.findall(MEMBER, first)) == MEMBERS_PAGE and "Next →" in first and "Previous" not in first
    assert _walk(client, f"/orgs/{slug}/", MEMBER, "Next →") == emails
    # A member (not an owner) pages through the same list.
    member = User.objects.get(email=emails[0])
    member_client = Client()
    member_client.force_login(member)
    assert _walk(member_client, f"/orgs/{slug}/", MEMBER, "Next →") == emails
    # The other tenant gets the same 404 as for a missing org, on any page, and its own org lists only itself.
    other = _client(tenant_b)
    for page in ("", "?page=2", "?page=abc"):
        assert other.get(f"/orgs/{slug}/{page}").status_code == 404
    b_slug = Membership.objects.get(user=tenant_b.user).org.slug
    assert _walk(other, f"/orgs/{b_slug}/", MEMBER, "Next →") == [tenant_b.user.email]


def test_a_crafted_members_page_number_answers_a_page(team: tuple[str, list[str]], tenant_a: Tenant,
                                                      tenant_b: Tenant) -> None:
    slug, emails = team
    client = _client(tenant_a)
    for bad in BAD_PAGES:
        response = client.get(f"/orgs/{slug}/?page={bad}")
        assert response.status_code == 200, bad
        assert re.findall(MEMBER, response.content.decode()) in (emails[:MEMBERS_PAGE], []), bad
    assert "No members this far down the list." in client.get(f"/orgs/{slug}/?page=9").content.decode()


def test_an_action_taken_on_a_later_page_lands_back_on_it(many_tokens: list[str], team: tuple[str, list[str]],
                                                          tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = _client(tenant_a)
    page_two = client.get("/settings/tokens?page=2").content.decode()
    action = re.search(r'action="(/settings/tokens/[0-9a-f-]+/revoke\?page=2)"', page_two)
    assert action is not None
    assert client.post(action.group(1))["Location"] == "/settings/tokens?page=2"
    assert "revoked. Its next request fails." in client.get("/settings/tokens?page=2").content.decode()
    slug, _ = team
    members = client.get(f"/orgs/{slug}/?page=2").content.decode()
    remove = re.search(rf'action="(/orgs/{slug}/members/[0-9a-f-]+/remove\?page=2)"', members)
    assert remove is not None
    assert client.post(remove.group(1))["Location"] == f"/orgs/{slug}/?page=2"
    assert client.post(f"/settings/tokens/{tenant_a.user_token.pk}/revoke")["Location"] == "/settings/tokens"
    # The other tenant cannot act on A's rows from any page: its token and membership stay.
    other = _client(tenant_b)
    other.post(f"/settings/tokens/{tenant_a.project_token.pk}/revoke?page=2")
    assert ApiToken.objects.get(pk=tenant_a.project_token.pk).revoked_at is None
    assert ApiToken.objects.filter(user=tenant_b.user, revoked_at__isnull=True).count() == 2
