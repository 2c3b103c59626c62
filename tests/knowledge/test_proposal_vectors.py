"""An approved proposal commits its row with its full-text at once and gets its vector from the batcher, as a taught
rule does; an approved skill patch gives the skill a vector of its new text, so its new line is found by meaning."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from knowledge.models import KnowledgeItem, Proposal, ProposalStatus
from knowledge.selectors.search import knowledge_search
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.knowledge_vectors import KNOWLEDGE_BATCHER
from knowledge.services.proposals import ProposalDraft, proposal_approve, proposal_record_many
from tests.conftest import Tenant

SKILL = "Format Python code with black using the repository configuration"
PATCH = "Regenerate the protobuf stubs after changing any .proto schema file"
NEW_RULE = "Pin the flaky websocket reconnect test with a fixed seed before touching the retry loop"


@pytest.fixture(autouse=True)
def _batched(settings: Any) -> None:
    settings.BRAIN_KNOWLEDGE_VECTORS = "batched"  # the default (tests/conftest.py sets inline for the rest)


def _proposals(tenant: Tenant) -> tuple[KnowledgeItem, dict[str, Proposal]]:
    """A skill of the tenant and two pending proposals: a line for that skill and a new rule."""
    skill = knowledge_create(owner=tenant.user, project=tenant.project, defer_vectors=False, draft=KnowledgeDraft(
        type="skill", stage="knowledge", trigger="when formatting Python code", content=SKILL))
    drafts = [ProposalDraft(target_key=f"skill:{skill.id}", kind="skill_patch", content=PATCH, score=5,
                            target_id=skill.id),
              ProposalDraft(target_key="new:websocket", kind="new_knowledge", content=NEW_RULE, score=5,
                            type="heuristic")]
    proposal_record_many(owner=tenant.user, project=tenant.project, session_id=uuid.uuid4(), drafts=drafts)
    return skill, {p.kind: p for p in Proposal.objects.filter(owner=tenant.user)}


def _ids(tenant: Tenant, query: str, mode: str) -> list[str]:
    return [str(h.id) for h in knowledge_search(principal=tenant.principal, query=query, mode=mode).hits]  # type: ignore[arg-type]


@pytest.mark.django_db
def test_an_approval_commits_before_any_vector(tenant_a: Tenant, tenant_b: Tenant,
                                                django_capture_on_commit_callbacks: Any) -> None:
    skill, pending = _proposals(tenant_a)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        proposal_approve(user=tenant_a.user, proposal_id=pending["skill_patch"].id)
        proposal_approve(user=tenant_a.user, proposal_id=pending["new_knowledge"].id)
    new = KnowledgeItem.objects.get(owner=tenant_a.user, content=NEW_RULE)
    patched = KnowledgeItem.objects.get(pk=skill.pk)
    assert (new.embedding, new.embedding_model) == (None, "")  # the approval did not wait for the model
    assert patched.content.endswith(f"- {PATCH}") and patched.embedding is None  # no vector of the old text
    assert len(queued) == 2  # each row's id goes to the batcher once its transaction commits
    assert _ids(tenant_a, "flaky websocket reconnect seed", "fts") == [str(new.id)]
    assert _ids(tenant_a, "protobuf stubs schema", "fts") == [str(skill.id)]
    assert _ids(tenant_b, "flaky websocket reconnect seed", "fts") == []


@pytest.mark.django_db(transaction=True)
def test_the_batcher_embeds_approved_rows_and_a_patched_skill_is_found_by_its_new_line(
    client: Client, tenant_a: Tenant, tenant_b: Tenant,
) -> None:
    skill, pending = _proposals(tenant_a)
    before = list(KnowledgeItem.objects.get(pk=skill.pk).embedding)
    client.force_login(tenant_a.user)
    for kind in ("skill_patch", "new_knowledge"):  # as a reviewer approves them on the dashboard
        url = reverse("dash_proposal_decide", args=[tenant_a.project.id, pending[kind].id])
        assert client.post(url, {"decision": "approve"}).status_code == 302
    assert set(Proposal.objects.values_list("status", flat=True)) == {ProposalStatus.APPROVED}
    assert KNOWLEDGE_BATCHER.flush(timeout=60)
    patched = KnowledgeItem.objects.get(pk=skill.pk)
    new = KnowledgeItem.objects.get(owner=tenant_a.user, content=NEW_RULE)
    assert patched.embedding is not None and list(patched.embedding) != before
    assert new.embedding is not None and new.embedding_model
    assert _ids(tenant_a, "rebuild generated gRPC code when the interface definition changes", "vector")[:1] == [
        str(skill.id)]
    assert _ids(tenant_a, "how to stabilise an intermittent socket test", "vector")[:1] == [str(new.id)]
    assert _ids(tenant_b, "how to stabilise an intermittent socket test", "vector") == []


@pytest.mark.django_db(transaction=True)
def test_inline_vectors_are_stored_before_the_approval_returns(settings: Any, tenant_a: Tenant,
                                                                 tenant_b: Tenant) -> None:
    settings.BRAIN_KNOWLEDGE_VECTORS = "inline"
    skill, pending = _proposals(tenant_a)
    _, theirs = _proposals(tenant_b)
    before = list(KnowledgeItem.objects.get(pk=skill.pk).embedding)
    proposal_approve(user=tenant_a.user, proposal_id=pending["skill_patch"].id)
    patched = KnowledgeItem.objects.get(pk=skill.pk)
    assert patched.embedding is not None and list(patched.embedding) != before
    assert Proposal.objects.get(pk=theirs["skill_patch"].pk).status == ProposalStatus.PENDING
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user, content__contains=PATCH).exists()


@pytest.mark.django_db
def test_the_same_line_proposed_by_two_sessions_is_appended_once(tenant_a: Tenant, tenant_b: Tenant) -> None:
    skill, _ = _proposals(tenant_a)
    again = ProposalDraft(target_key=f"skill:{skill.id}", kind="skill_patch", content=PATCH, score=5,
                          target_id=skill.id)
    proposal_record_many(owner=tenant_a.user, project=tenant_a.project, session_id=uuid.uuid4(), drafts=[again])
    patches = Proposal.objects.filter(owner=tenant_a.user, kind="skill_patch")
    assert patches.count() == 2
    for patch in patches:
        proposal_approve(user=tenant_a.user, proposal_id=patch.id)
    content = KnowledgeItem.objects.get(pk=skill.pk).content
    assert content.splitlines().count(f"- {PATCH}") == 1
    assert set(patches.values_list("status", flat=True)) == {ProposalStatus.APPROVED}
    assert not Proposal.objects.filter(owner=tenant_b.user).exists()
