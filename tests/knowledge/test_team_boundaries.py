"""What crosses an org's boundary through side paths: a personal rule's audit record stays in its owner's personal org,
and proposals of a member who left an org no longer write into its project. tenant_b is the outsider who sees
nothing of either."""

from __future__ import annotations

import uuid

import pytest

from brain.errors import NotFound
from knowledge.models import KnowledgeItem, Proposal, ProposalStatus
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.proposals import ProposalDraft, proposal_approve, proposal_record_many
from knowledge.services.teach import knowledge_teach
from projects.models import AuditEvent, Membership
from projects.selectors.audit import audit_for_owner
from projects.services.accounts import project_ensure_named
from projects.services.orgs import membership_remove
from tests.conftest import Tenant
from tests.knowledge.team import make_team

pytestmark = pytest.mark.django_db
SECRET = "Use the staging password from my own vault note before any deploy"


def test_superseding_a_personal_rule_is_audited_in_the_personal_org(tenant_a: Tenant, tenant_b: Tenant) -> None:
    team = make_team(tenant_a)
    first = knowledge_teach(principal=team.member, rule=SECRET, scope="user", project_id=str(team.project.id))
    later = knowledge_teach(principal=team.member, rule=f"{SECRET}, then rotate it", scope="user",
                            project_id=str(team.project.id), supersedes_knowledge_id=str(first.item.id))
    assert later.superseded_id == first.item.id and later.item.project_id is None
    event = AuditEvent.objects.get(target=f"knowledge:{first.item.id}")
    assert event.org.personal_for_id == team.member.user.pk  # the member's own org, readable by the member
    assert not audit_for_owner(user=tenant_a.user).filter(summary__contains="staging password").exists()
    assert not audit_for_owner(user=tenant_b.user).filter(summary__contains="staging password").exists()


def _pending(who: object, project: object, drafts: list[ProposalDraft]) -> dict[str, Proposal]:
    proposal_record_many(owner=who, project=project, session_id=uuid.uuid4(), drafts=drafts)  # type: ignore[arg-type]
    return {p.kind: p for p in Proposal.objects.filter(owner=who)}


def test_a_member_who_left_cannot_apply_proposals_in_the_orgs_project(tenant_a: Tenant, tenant_b: Tenant) -> None:
    team = make_team(tenant_a)
    member = team.member.user
    skill = knowledge_create(owner=member, project=team.project, draft=KnowledgeDraft(
        type="skill", stage="knowledge", trigger="when deploying", content="Deploy with the blue-green script"))
    pending = _pending(member, team.project, [
        ProposalDraft(target_key="new:x", kind="new_knowledge", content="Tag every release before deploying", score=5),
        ProposalDraft(target_key=f"skill:{skill.id}", kind="skill_patch", content="Warm the cache after the switch",
                      score=5, target_id=skill.id)])
    membership = Membership.objects.get(org=team.org, user=member)
    membership_remove(user=tenant_a.user, org=team.org, membership_id=membership.pk)
    for kind in ("new_knowledge", "skill_patch"):
        with pytest.raises(NotFound):
            proposal_approve(user=member, proposal_id=pending[kind].id)
    assert set(Proposal.objects.filter(owner=member).values_list("status", flat=True)) == {ProposalStatus.PENDING}
    assert KnowledgeItem.objects.get(pk=skill.pk).content == "Deploy with the blue-green script"
    assert list(KnowledgeItem.objects.filter(project=team.project).values_list("pk", flat=True)) == [skill.pk]
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_a_skill_patch_never_reaches_into_another_project(tenant_a: Tenant, tenant_b: Tenant) -> None:
    other, _ = project_ensure_named(user=tenant_a.user, name="Other Service")
    skill = knowledge_create(owner=tenant_a.user, project=other, draft=KnowledgeDraft(
        type="skill", stage="knowledge", trigger="when deploying", content="Deploy with the blue-green script"))
    pending = _pending(tenant_a.user, tenant_a.project, [
        ProposalDraft(target_key=f"skill:{skill.id}", kind="skill_patch", content="Warm the cache after the switch",
                      score=5, target_id=skill.id)])
    with pytest.raises(NotFound):
        proposal_approve(user=tenant_a.user, proposal_id=pending["skill_patch"].id)
    assert KnowledgeItem.objects.get(pk=skill.pk).content == "Deploy with the blue-green script"
    with pytest.raises(NotFound):  # and another tenant's proposal is not there at all
        proposal_approve(user=tenant_b.user, proposal_id=pending["skill_patch"].id)


def test_an_action_item_held_for_review_is_resolved_only_by_its_author(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from knowledge.models import ReviewStatus
    from knowledge.services.actions import action_item_resolve
    from projects.services.orgs import org_review_set

    team = make_team(tenant_a)
    org_review_set(user=tenant_a.user, org=team.org, required=True)
    held = team.teach(team.member, "Rotate the staging database password before Friday", type="action_item",
                      tags=["action-item", "for:mo@delta.example"]).item
    assert held.review_status == ReviewStatus.PENDING
    for outsider in (team.owner, tenant_b.principal):  # not the author's to resolve until it is reviewed
        with pytest.raises(NotFound):
            action_item_resolve(principal=outsider, item_id=held.id)
    assert KnowledgeItem.objects.get(pk=held.pk).deleted_at is None
    assert action_item_resolve(principal=team.member, item_id=held.id).deleted_at is not None


def test_sessions_in_an_org_the_member_left_teach_it_nothing_more(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """The daily cross-session extract reads only sessions of projects the user still reaches: a pattern seen in
    an org's sessions is not written into that org after its author left."""
    from datetime import UTC, datetime, timedelta

    from sessions.services.cross_session import cross_session_run_all
    from tests.support.closed_session import closed_session

    as_of = datetime(2026, 6, 1, tzinfo=UTC)
    team = make_team(tenant_a)
    member = team.member.user
    texts = ["Never use print for debugging output, we use the logging module.",
             "never use print for debugging output; we use the logging module",
             "Always run the type checker before pushing a branch."]
    for day, text in enumerate(texts):
        closed_session(user=member, project=team.project, prompt=f"task {day}",
                       ended_at=as_of - timedelta(days=5 - day), events=[("user_correction", text, {})])
    membership_remove(user=tenant_a.user, org=team.org, membership_id=Membership.objects.get(
        org=team.org, user=member).pk)
    assert cross_session_run_all(as_of=as_of) == 0
    assert not KnowledgeItem.objects.filter(owner=member).exists()
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
