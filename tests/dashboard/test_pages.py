"""Dashboard pages with two tenants: everything renders for its owner, nothing leaks to the other."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import Contradiction, KnowledgeItem, ProposalStatus
from projects.models import AuditEvent
from tests.conftest import Tenant
from tests.dashboard.world import World, build_world
from tests.mcpgw.conftest import ops

pytestmark = pytest.mark.django_db


@pytest.fixture
def world_a(tenant_a: Tenant) -> World:
    return build_world(tenant_a, "alphaword")


@pytest.fixture
def world_b(tenant_b: Tenant) -> World:
    return build_world(tenant_b, "bravoword")


def _login(client: Client, tenant: Tenant) -> Client:
    client.force_login(tenant.user)
    return client


def _pages(t: Tenant, w: World) -> dict[str, str]:
    p = t.project.id
    return {
        "overview": reverse("dash_overview", args=[p]),
        "knowledge": reverse("dash_knowledge", args=[p]),
        "search": reverse("dash_knowledge", args=[p]) + "?q=release+step+migrations",
        "detail": reverse("dash_knowledge_detail", args=[p, w.rule.id]),
        "old": reverse("dash_knowledge_detail", args=[p, w.old.id]),
        "teach": reverse("dash_knowledge_teach", args=[p]),
        "sessions": reverse("dash_sessions", args=[p]),
        "session": reverse("dash_session", args=[p, w.session.id]),
        "review": reverse("dash_review", args=[p]),
        "actions": reverse("dash_actions", args=[p]),
        "oracle": reverse("dash_oracle", args=[p]),
    }


def test_every_page_renders_its_owners_data(client: Client, tenant_a: Tenant, world_a: World,
                                            world_b: World) -> None:
    _login(client, tenant_a)
    expected = {
        "overview": "<svg", "knowledge": "alphaword migrations run in a release step", "search": "Why it ranks",
        "detail": "alphaword migrations run before deploy", "old": "(superseded)", "teach": "Teach a rule",
        "sessions": "alphaword deploy the release", "session": "alphaword no, use the release step",
        "review": "alphaword always tag releases", "actions": "Blocker:", "oracle": "Ask your brain",
    }
    for name, url in _pages(tenant_a, world_a).items():
        response = client.get(url)
        body = response.content.decode()
        assert response.status_code == 200, name
        assert expected[name] in body, name
        assert "bravoword" not in body, name
    for url in (reverse("dash_peer_card"), reverse("dash_audit")):
        assert client.get(url).status_code == 200
    listing = client.get(_pages(tenant_a, world_a)["knowledge"]).content.decode()
    assert listing.count('<option value="taught">') == 1  # the source filter lists each source once


def test_the_other_tenant_gets_404_on_every_page_of_the_first(client: Client, tenant_a: Tenant, tenant_b: Tenant,
                                                               world_a: World, world_b: World) -> None:
    _login(client, tenant_b)
    for name, url in _pages(tenant_a, world_a).items():
        assert client.get(url).status_code == 404, name
    # The first tenant's rows under the second tenant's own project id: still 404.
    pb = tenant_b.project.id
    for url in (reverse("dash_knowledge_detail", args=[pb, world_a.rule.id]),
                reverse("dash_session", args=[pb, world_a.session.id])):
        assert client.get(url).status_code == 404
    for name, url in _pages(tenant_b, world_b).items():
        body = client.get(url).content.decode()
        assert "alphaword" not in body, name
    for url in (reverse("dash_audit"), reverse("dash_peer_card"), reverse("dash_switch") + f"?project={pb}"):
        assert "alphaword" not in client.get(url, follow=True).content.decode()


def test_writes_on_the_first_tenants_rows_are_404_and_change_nothing(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, world_a: World,
) -> None:
    _login(client, tenant_b)
    pa, pb, rid = tenant_a.project.id, tenant_b.project.id, world_a.rule.id
    for project in (pa, pb):
        assert client.post(reverse("dash_knowledge_delete", args=[project, rid])).status_code == 404
        assert client.post(reverse("dash_knowledge_supersede", args=[project, rid]),
                           {"new-content": "hijacked rule"}).status_code == 404
        assert client.post(reverse("dash_knowledge_edit", args=[project, rid]), {
            "edit-content": "hijacked rule", "edit-type": "rule", "edit-confidence": "1"}).status_code == 404
    client.post(reverse("dash_proposal_decide", args=[pb, world_a.proposal.id]), {"decision": "approve"})
    world_a.rule.refresh_from_db()
    world_a.proposal.refresh_from_db()
    assert world_a.rule.deleted_at is None and world_a.rule.superseded_by_id is None
    assert world_a.proposal.status == ProposalStatus.PENDING
    assert client.get(reverse("dash_switch") + f"?project={pa}").status_code == 404
    pair = Contradiction.objects.get(owner=tenant_a.user)
    client.post(reverse("dash_contradiction_resolve", args=[pb, pair.id]))
    pair.refresh_from_db()
    assert pair.resolved_at is None


def test_resolving_a_contradiction_takes_it_off_the_queue(client: Client, tenant_a: Tenant, world_a: World) -> None:
    _login(client, tenant_a)
    pair = Contradiction.objects.get(owner=tenant_a.user)
    review = reverse("dash_review", args=[tenant_a.project.id])
    assert "Contradictions (1)" in client.get(review).content.decode()
    client.post(reverse("dash_contradiction_resolve", args=[tenant_a.project.id, pair.id]))
    assert "Contradictions (0)" in client.get(review).content.decode()


def test_anonymous_visitors_are_sent_to_sign_in(client: Client, tenant_a: Tenant) -> None:
    response = client.get(reverse("dash_overview", args=[tenant_a.project.id]))
    assert response.status_code == 302 and "/accounts/login" in response["Location"]


def test_home_redirects_to_the_first_project(client: Client, tenant_a: Tenant) -> None:
    _login(client, tenant_a)
    response = client.get(reverse("dash_home"))
    assert response["Location"] == reverse("dash_overview", args=[tenant_a.project.id])


def test_teach_edit_supersede_delete_restore_through_the_pages(client: Client, tenant_a: Tenant) -> None:
    _login(client, tenant_a)
    p = tenant_a.project.id
    bad = client.post(reverse("dash_knowledge_teach", args=[p]), {"rule": "x", "type": "heuristic"})
    assert bad.status_code == 400 and not KnowledgeItem.objects.filter(owner=tenant_a.user).exists()
    response = client.post(reverse("dash_knowledge_teach", args=[p]),
                           {"rule": "Pin the Node version in CI", "type": "heuristic", "tags": "ci, node"})
    item = KnowledgeItem.objects.get(owner=tenant_a.user)
    assert response["Location"] == reverse("dash_knowledge_detail", args=[p, item.id])
    client.post(reverse("dash_knowledge_edit", args=[p, item.id]), {
        "edit-content": "Pin the Node version in CI (.nvmrc)", "edit-trigger": "", "edit-rationale": "",
        "edit-type": "heuristic", "edit-tags": "ci", "edit-confidence": "0.9"})
    item.refresh_from_db()
    assert (item.content, item.tags, item.confidence) == ("Pin the Node version in CI (.nvmrc)", ["ci"], 0.9)
    client.post(reverse("dash_knowledge_supersede", args=[p, item.id]), {"new-content": "Pin Node with .nvmrc"})
    item.refresh_from_db()
    assert item.superseded_by is not None and item.superseded_by.content == "Pin Node with .nvmrc"
    new = item.superseded_by
    client.post(reverse("dash_knowledge_delete", args=[p, new.id]))
    new.refresh_from_db()
    assert new.deleted_at is not None
    client.post(reverse("dash_knowledge_delete", args=[p, new.id]), {"restore": "1"})
    new.refresh_from_db()
    assert new.deleted_at is None
    actions = list(AuditEvent.objects.filter(actor=tenant_a.user).values_list("action", flat=True))
    assert {"knowledge.superseded", "knowledge.deleted", "knowledge.restored"} <= set(actions)


def test_review_approve_and_reject_with_a_reason(client: Client, tenant_a: Tenant, world_a: World) -> None:
    _login(client, tenant_a)
    url = reverse("dash_proposal_decide", args=[tenant_a.project.id, world_a.proposal.id])
    client.post(url, {"decision": "reject", "reason": ""})
    world_a.proposal.refresh_from_db()
    assert world_a.proposal.status == ProposalStatus.PENDING  # a reason is required
    client.post(url, {"decision": "approve"})
    world_a.proposal.refresh_from_db()
    assert world_a.proposal.status == ProposalStatus.APPROVED
    search = client.get(reverse("dash_knowledge", args=[tenant_a.project.id]) + "?q=always+tag+releases")
    assert "alphaword always tag releases" in search.content.decode()


def test_peer_card_oracle_and_audit(client: Client, tenant_a: Tenant, tenant_b: Tenant, world_a: World) -> None:
    _login(client, tenant_a)
    client.post(reverse("dash_peer_card"), {"facts": "editor: helixsecret\ntone: terse"})
    assert "editor: helixsecret" in client.get(reverse("dash_peer_card")).content.decode()
    oracle_url = reverse("dash_oracle", args=[tenant_a.project.id])
    asked = client.post(oracle_url, {"question": "how do migrations run?"})
    assert asked.status_code == 302 and asked["Location"] == oracle_url  # reloading the answer never asks again
    answer = client.get(oracle_url).content.decode()
    assert "alphaword migrations run in a release step" in answer and "groundedness" in answer
    assert "how do migrations run?" in answer  # the question stays in its box
    audit = client.get(reverse("dash_audit")).content.decode()
    assert "Knowledge deleted" in audit and "Token minted" in audit
    _login(client, tenant_b)
    assert "helixsecret" not in client.get(reverse("dash_peer_card")).content.decode()


def test_list_pages_cost_a_bounded_number_of_queries(
    client: Client, tenant_a: Tenant, world_a: World, django_assert_max_num_queries: object,
) -> None:
    for i in range(12):  # more rows than the bound: a query per row would blow it
        build_world_extra(tenant_a, i)
    _login(client, tenant_a)
    pages = _pages(tenant_a, world_a)
    for name in ("overview", "knowledge", "search", "sessions", "review", "actions"):
        with django_assert_max_num_queries(20):  # type: ignore[operator]
            assert client.get(pages[name]).status_code == 200, name


def build_world_extra(tenant: Tenant, i: int) -> None:
    build_world(tenant, f"extra{i}word", day=i + 2)


def test_approving_and_superseding_over_the_services_are_audited(client: Client, tenant_a: Tenant,
                                                                   world_a: World) -> None:
    _login(client, tenant_a)
    client.post(reverse("dash_proposal_decide", args=[tenant_a.project.id, world_a.proposal.id]),
                {"decision": "approve"})
    actions = set(AuditEvent.objects.filter(actor=tenant_a.user).values_list("action", flat=True))
    assert {"proposal.approved", "knowledge.superseded", "project.created", "token.minted"} <= actions


def test_action_items_by_assignee_and_state(client: Client, tenant_a: Tenant, world_a: World) -> None:
    _login(client, tenant_a)
    url = reverse("dash_actions", args=[tenant_a.project.id])
    assert "rotate the staging keys" in client.get(url + "?for=alice@a.example").content.decode()
    assert "rotate the staging keys" not in client.get(url + "?for=carol@c.example").content.decode()
    assert "rotate the staging keys" not in client.get(url + "?state=resolved").content.decode()
    client.post(reverse("dash_knowledge_delete", args=[tenant_a.project.id, world_a.action.id]))  # resolved
    assert "rotate the staging keys" in client.get(url + "?state=resolved").content.decode()
    assert "rotate the staging keys" not in client.get(url).content.decode()


def test_a_decision_that_is_neither_approve_nor_reject_changes_nothing(client: Client, tenant_a: Tenant,
                                                                       world_a: World) -> None:
    _login(client, tenant_a)
    url = reverse("dash_proposal_decide", args=[tenant_a.project.id, world_a.proposal.id])
    for form in ({"reason": "a crafted form with no decision"}, {"decision": "aprove", "reason": "a typo"}):
        assert client.post(url, form).status_code == 400
    world_a.proposal.refresh_from_db()
    assert world_a.proposal.status == ProposalStatus.PENDING


def test_a_members_held_action_item_and_someone_elses_contradiction(client: Client, tenant_a: Tenant,
                                                                    tenant_b: Tenant, world_a: World) -> None:
    """A member's held action item is not listed to the others (its link answered 404), and only the owner of a
    contradiction is offered to mark it resolved (the others were refused after clicking)."""
    from projects.models import Membership
    from projects.services.accounts import user_create

    member = user_create(email="member@a.example")
    Membership.objects.create(org=tenant_a.project.org, user=member, role=Membership.Role.MEMBER)
    KnowledgeItem.objects.create(owner=member, project=tenant_a.project, type="action_item",
                                 content="held: rotate the member keys", tags=["for:alice@a.example"],
                                 review_status="pending")
    pair = Contradiction.objects.get(owner=tenant_a.user)
    Contradiction.objects.filter(pk=pair.pk).update(owner=member)
    _login(client, tenant_a)
    actions = client.get(reverse("dash_actions", args=[tenant_a.project.id])).content.decode()
    assert "rotate the staging keys" in actions and "rotate the member keys" not in actions
    review = client.get(reverse("dash_review", args=[tenant_a.project.id])).content.decode()
    assert reverse("dash_contradiction_resolve", args=[tenant_a.project.id, pair.id]) not in review
    assert "Its owner, member@a.example, marks it resolved." in review
    _login(client, tenant_b)
    assert client.get(reverse("dash_actions", args=[tenant_a.project.id])).status_code == 404


def test_crafted_filters_and_page_numbers_answer_the_page(client: Client, tenant_a: Tenant, tenant_b: Tenant,
                                                          world_a: World) -> None:
    """A NUL in a free-text filter and a page number past bigint reached PostgreSQL and answered an HTML 500."""
    _login(client, tenant_a)
    p = tenant_a.project.id
    for url in (reverse("dash_sessions", args=[p]) + "?client=%00x&outcome=%00",
                reverse("dash_actions", args=[p]) + "?for=alice%00@a.example",
                reverse("dash_sessions", args=[p]) + "?page=99999999999999999999",
                reverse("dash_guard", args=[p]) + "?page=99999999999999999999",
                reverse("dash_knowledge", args=[p]) + "?page=99999999999999999999"):
        assert client.get(url).status_code == 200, url
    _login(client, tenant_b)
    assert client.get(reverse("dash_sessions", args=[p]) + "?client=%00").status_code == 404


def test_a_refused_edit_or_supersede_keeps_what_was_typed(client: Client, tenant_a: Tenant, tenant_b: Tenant,
                                                          world_a: World) -> None:
    _login(client, tenant_a)
    p, rid = tenant_a.project.id, world_a.rule.id
    typed = "alphaword a long careful rewrite the person typed " * 3
    edit = client.post(reverse("dash_knowledge_edit", args=[p, rid]), {
        "edit-content": typed, "edit-type": "heuristic", "edit-tags": "ops", "edit-confidence": "7"})
    page = edit.content.decode()
    assert edit.status_code == 400 and typed.strip() in page and "<details open><summary>Edit in place" in page
    assert "less than or equal to 1" in page
    supersede = client.post(reverse("dash_knowledge_supersede", args=[p, rid]), {"new-content": "x"})
    page = supersede.content.decode()
    assert supersede.status_code == 400 and "<details open><summary>Supersede" in page
    assert "at least 3 characters" in page or "characters" in page
    world_a.rule.refresh_from_db()
    assert world_a.rule.content != typed and world_a.rule.superseded_by_id is None
    _login(client, tenant_b)
    assert client.post(reverse("dash_knowledge_edit", args=[p, rid]), {"edit-content": typed}).status_code == 404


def test_error_pages_are_the_products_with_a_way_back(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    _login(client, tenant_b)
    missing = client.get(reverse("dash_overview", args=[tenant_a.project.id]))  # another tenant's project
    page = missing.content.decode()
    assert missing.status_code == 404 and "<h1>Not found</h1>" in page and reverse("dash_home") in page
    assert "alphaword" not in page and str(tenant_a.project.name) not in page
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(tenant_b.user)
    expired = strict.post(reverse("dash_knowledge_teach", args=[tenant_b.project.id]), {"rule": "x"})
    assert expired.status_code == 403 and "This form has expired" in expired.content.decode()
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
    from django.template.loader import render_to_string

    assert "Something went wrong on the server" in render_to_string("500.html")


def test_search_filters_narrow_the_search_not_its_top_twenty(client: Client, tenant_a: Tenant,
                                                             tenant_b: Tenant) -> None:
    """A tag or confidence filter with a query was applied to the 20 best hits only: a matching row ranked 21st
    or lower was reported as "Nothing matches"."""
    from knowledge.services.teach import knowledge_teach

    for n in range(30):
        knowledge_teach(principal=tenant_a.principal, type="reflex", rule=f"Deploy step {n}: deploy the deploy "
                        f"artifacts to deploy targets with the deploy script, deploy number {n}")
    knowledge_teach(principal=tenant_a.principal, type="reflex", rule="Rotate keys quarterly; this also affects "
                    "how we deploy", tags=["ops"])
    knowledge_teach(principal=tenant_b.principal, type="reflex", rule="Deploy with care", tags=["ops"])
    _login(client, tenant_a)
    url = reverse("dash_knowledge", args=[tenant_a.project.id])
    page = client.get(url, {"q": "deploy", "tag": "ops"}).content.decode()
    assert "Rotate keys quarterly" in page and "Deploy step" not in page and "Deploy with care" not in page
    refused = client.get(url, {"q": "deploy steps", "min_confidence": "7"}).content.decode()
    assert 'value="deploy steps"' in refused and "less than or equal to 1" in refused


def test_a_peer_card_line_that_would_be_dropped_or_cut_is_named(client: Client, tenant_a: Tenant,
                                                                tenant_b: Tenant) -> None:
    from knowledge.models import PeerCard

    _login(client, tenant_a)
    typed = "editor: neovim\nprefers tabs\nbio: " + "b" * 501
    refused = client.post(reverse("dash_peer_card"), {"facts": typed})
    page = refused.content.decode()
    assert refused.status_code == 400 and "line 2: write it as key: value" in page
    assert "line 3: the value is 501 characters; at most 500" in page and "prefers tabs" in page
    assert not PeerCard.objects.filter(user=tenant_a.user).exclude(facts={}).exists()
    assert client.post(reverse("dash_peer_card"), {"facts": "editor: neovim"}).status_code == 302
    assert PeerCard.objects.get(user=tenant_a.user).facts == {"editor": "neovim"}
    assert not PeerCard.objects.filter(user=tenant_b.user).exclude(facts={}).exists()


def test_the_review_page_shows_the_oldest_held_rules_and_counts_them_all(client: Client, tenant_a: Tenant,
                                                                         tenant_b: Tenant) -> None:
    from knowledge.selectors.dashboard import PAGE
    from projects.models import Membership
    from projects.services.accounts import user_create

    member = user_create(email="member@a.example")
    Membership.objects.create(org=tenant_a.project.org, user=member, role=Membership.Role.MEMBER)
    KnowledgeItem.objects.bulk_create([
        KnowledgeItem(owner=member, project=tenant_a.project, type="reflex", content=f"held rule number {n}",
                      review_status="pending") for n in range(PAGE + 3)])
    _login(client, tenant_a)
    page = client.get(reverse("dash_review", args=[tenant_a.project.id])).content.decode()
    assert f"Members' rules waiting for you ({PAGE + 3}, the oldest {PAGE} shown)" in page
    assert page.count("Approve rule</button>") == PAGE
    _login(client, tenant_b)
    assert client.get(reverse("dash_review", args=[tenant_a.project.id])).status_code == 404


def test_an_action_after_the_session_ran_out_signs_in_and_comes_back_to_its_page(client: Client, tenant_a: Tenant,
                                                                                 world_a: World) -> None:
    """With login_required a POST-only action sent the person back to its own URL after sign-in: a GET, a blank
    405. Now they come back to the page the button was on; a referer from elsewhere is not followed."""
    from urllib.parse import quote

    p, rid = tenant_a.project.id, world_a.rule.id
    detail = reverse("dash_knowledge_detail", args=[p, rid])
    answer = client.post(reverse("dash_knowledge_delete", args=[p, rid]), HTTP_REFERER=f"http://testserver{detail}")
    assert answer.status_code == 302 and answer["Location"] == f"/accounts/login/?next={quote(detail)}"
    hostile = client.post(reverse("dash_knowledge_delete", args=[p, rid]), HTTP_REFERER="https://evil.example/x")
    assert hostile["Location"] == f"/accounts/login/?next={quote(reverse('dash_home'))}"
    world_a.rule.refresh_from_db()
    assert world_a.rule.deleted_at is None


def test_irreversible_actions_ask_first(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Revoking a token, removing a member and rejecting a member's rule each sit behind a disclosure that says
    what follows; the button that acts is inside it (one click no longer did it)."""
    import re

    _login(client, tenant_a)
    tokens = client.get(reverse("tokens")).content.decode()
    prefix = tenant_a.user_token.prefix
    block = re.search(rf"<details><summary aria-label=\"Revoke {prefix}…\">Revoke…</summary>(.*?)</details>",
                      tokens, re.S)
    assert block and "cannot be undone" in block.group(1) and "Revoke for good" in block.group(1)
    assert reverse("token_revoke", args=[tenant_a.user_token.pk]) in block.group(1)
    assert tenant_b.user_token.prefix not in tokens


def test_a_long_timeline_says_it_is_cut(client: Client, tenant_a: Tenant, tenant_b: Tenant, monkeypatch: Any) -> None:
    from sessions.selectors import dashboard as session_pages
    from sessions.services.events import EventDraft, session_events_log_many
    from sessions.services.open import session_open

    monkeypatch.setattr(session_pages, "EVENTS_MAX", 5)
    session = session_open(principal=tenant_a.principal, prompt="a long session").session
    session_events_log_many(session=session, drafts=[EventDraft("note", f"step {n}") for n in range(7)])
    _login(client, tenant_a)
    page = client.get(reverse("dash_session", args=[tenant_a.project.id, session.id])).content.decode()
    assert "The first 5 of 8 events" in page and page.count('<span class="tag">note</span>') <= 5
    _login(client, tenant_b)
    assert client.get(reverse("dash_session", args=[tenant_a.project.id, session.id])).status_code == 404


def test_the_oracle_asks_once_per_question_and_keeps_each_projects_answer(
        client: Client, caplog: pytest.LogCaptureFixture, tenant_a: Tenant, tenant_b: Tenant, world_a: World,
        world_b: World) -> None:
    caplog.set_level(logging.INFO)
    _login(client, tenant_a)
    oracle_url = reverse("dash_oracle", args=[tenant_a.project.id])
    client.post(oracle_url, {"question": "how do migrations run?"})
    assert len(ops(caplog, "oracle.ask")) == 1
    for _ in range(3):  # reloads
        page = client.get(oracle_url).content.decode()
        assert "alphaword migrations run in a release step" in page
    assert len(ops(caplog, "oracle.ask")) == 1
    assert client.post(oracle_url, {"question": "x"}).status_code == 200  # refused: the form says why, no redirect
    # The other tenant's oracle page shows nothing of A's answer, and A's answer is not on B's project.
    _login(client, tenant_b)
    other = client.get(reverse("dash_oracle", args=[tenant_b.project.id])).content.decode()
    assert "alphaword" not in other and "how do migrations run?" not in other
