"""The dream cycle proposes, a person decides: its merges and fades wait in the review queue (approved or rejected
on the dashboard's review page), pinned rows are never proposed nor changed, the other tenant sees none of it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from brain.errors import Conflict, NotFound
from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem, Proposal, ProposalKind, ProposalStatus
from knowledge.nightly import NightlyScope
from knowledge.selectors.search import decay_floor
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.services.curate import knowledge_pin
from knowledge.services.proposals import proposal_approve
from knowledge.tasks import decay_scope, evolve_scope
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
TWIN_OLD = "Always run the formatter before committing Python code."
TWIN_NEW = "Always run the formatter before committing python code"
STALE_FRAMEWORK = "Use select_related for foreign keys in Django list views"
UNUSED = "Document every public endpoint in the API guide"
PAIR_OLD = "Always prefer pathlib over os.path when building file system paths in Python scripts."
PAIR_NEW = "Always prefer pathlib over os.path when building file system paths in Python scripts"
PINNED = "Keep the Django release checklist in the wiki"


def _rows(tenant: Tenant) -> dict[str, KnowledgeItem]:
    drafts = [KnowledgeDraft(content=TWIN_OLD, confidence=0.9), KnowledgeDraft(content=TWIN_NEW, confidence=0.9),
              KnowledgeDraft(content=PAIR_OLD, confidence=0.9), KnowledgeDraft(content=PAIR_NEW, confidence=0.9),
              KnowledgeDraft(content=STALE_FRAMEWORK, framework="django", confidence=0.8),
              KnowledgeDraft(content=UNUSED, confidence=0.8), KnowledgeDraft(content=PINNED, framework="django")]
    rows = {r.content: r for r in knowledge_create_many(owner=tenant.user, project=tenant.project, drafts=drafts)}
    now = timezone.now()
    KnowledgeItem.objects.filter(id__in=[rows[TWIN_NEW].id, rows[PAIR_NEW].id]).update(
        created_at=now + timedelta(seconds=1))
    KnowledgeItem.objects.filter(id__in=[rows[c].id for c in (STALE_FRAMEWORK, PINNED)]).update(
        last_used_at=now - timedelta(days=200), created_at=now - timedelta(days=300))
    KnowledgeItem.objects.filter(id=rows[UNUSED].id).update(last_used_at=now - timedelta(days=400))
    knowledge_pin(principal=tenant.principal, item_id=rows[PINNED].id)
    return rows


def _dream(tenant: Tenant) -> DreamRun:
    scope = NightlyScope(project_id=tenant.project.id, owner_id=None)
    run = DreamRun.objects.create(owner=tenant.user, scope=scope.key, reason="writes")
    for task in (evolve_scope, decay_scope):  # the dream run's two knowledge jobs, run in-process
        assert task(scope.key, timezone.now().isoformat(), str(run.id)) == "ok"
    return run


def _state(tenant: Tenant) -> set[tuple[str, object, float, float]]:
    return {(r.content, r.superseded_by_id, r.confidence, r.decay_score)
            for r in KnowledgeItem.objects.filter(owner=tenant.user)}


def test_dream_proposals_wait_for_a_person(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    rows, theirs = _rows(tenant_a), _rows(tenant_b)
    before = _state(tenant_a)
    _dream(tenant_a)
    assert _state(tenant_a) == before  # nothing applied: everything waits
    proposed = {(p.kind, p.content, p.signals[0].get("fade")): p for p in Proposal.objects.filter(owner=tenant_a.user)}
    assert set(proposed) == {(ProposalKind.MERGE, TWIN_NEW, None), (ProposalKind.MERGE, PAIR_NEW, None),
                             (ProposalKind.FADE, STALE_FRAMEWORK, "age_out"),
                             (ProposalKind.FADE, UNUSED, "retire")}  # the pinned row: never proposed
    assert not Proposal.objects.filter(owner=tenant_b.user).exists()
    _dream(tenant_a)  # a later run repeats none of the waiting proposals
    assert Proposal.objects.filter(owner=tenant_a.user).count() == 4

    merge = proposed[(ProposalKind.MERGE, TWIN_NEW, None)]
    client.force_login(tenant_b.user)  # the other tenant can decide nothing
    client.post(reverse("dash_proposal_decide", args=[tenant_b.project.id, merge.id]), {"decision": "approve"})
    with pytest.raises(NotFound):
        proposal_approve(user=tenant_b.user, proposal_id=merge.id)
    assert Proposal.objects.get(id=merge.id).status == ProposalStatus.PENDING

    client.force_login(tenant_a.user)
    page = client.get(reverse("dash_review", args=[tenant_a.project.id])).content.decode()
    assert "From the dream cycle" in page and "Fold a near-duplicate" in page
    decide = reverse("dash_proposal_decide", args=[tenant_a.project.id, merge.id])
    client.post(decide, {"decision": "approve"})
    assert KnowledgeItem.objects.get(id=rows[TWIN_NEW].id).superseded_by_id == rows[TWIN_OLD].id
    kept_apart = proposed[(ProposalKind.MERGE, PAIR_NEW, None)]
    client.post(reverse("dash_proposal_decide", args=[tenant_a.project.id, kept_apart.id]),
                {"decision": "reject", "reason": "we keep both wordings on purpose"})
    assert Proposal.objects.get(id=kept_apart.id).status == ProposalStatus.REJECTED
    assert KnowledgeItem.objects.get(id=rows[PAIR_NEW].id).superseded_by_id is None  # rejected: both stay live
    aged = proposed[(ProposalKind.FADE, STALE_FRAMEWORK, "age_out")]
    client.post(reverse("dash_proposal_decide", args=[tenant_a.project.id, aged.id]),
                {"decision": "reject", "reason": "still how we write list views"})
    assert Proposal.objects.get(id=aged.id).status == ProposalStatus.REJECTED
    assert KnowledgeItem.objects.get(id=rows[STALE_FRAMEWORK].id).confidence == 0.8  # rejected: unchanged

    retire = proposed[(ProposalKind.FADE, UNUSED, "retire")]
    knowledge_pin(principal=tenant_a.principal, item_id=rows[UNUSED].id)  # pinned since it was proposed
    with pytest.raises(Conflict, match="pinned"):
        proposal_approve(user=tenant_a.user, proposal_id=retire.id)
    knowledge_pin(principal=tenant_a.principal, item_id=rows[UNUSED].id, pinned=False)
    proposal_approve(user=tenant_a.user, proposal_id=retire.id)
    assert KnowledgeItem.objects.get(id=rows[UNUSED].id).decay_score <= decay_floor()  # out of retrieval now
    assert KnowledgeItem.objects.get(id=rows[PINNED].id).decay_score == 1.0
    _dream(tenant_a)  # the rejected merge and fade are not proposed again
    assert Proposal.objects.filter(owner=tenant_a.user, status=ProposalStatus.PENDING).count() == 0
    assert all(r.superseded_by_id is None for r in theirs.values())
