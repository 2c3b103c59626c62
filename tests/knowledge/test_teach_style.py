"""Teaching, supersession, user style, skills and the peer card, each against a second tenant."""

from __future__ import annotations

import uuid

import pytest

from brain.errors import ForbiddenProject, ValidationFailed
from knowledge.models import KnowledgeItem
from knowledge.selectors.live import PeerCardView, UserStyle, skills_active, skills_find, user_style
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.services.peer import peer_card_set
from knowledge.services.teach import knowledge_teach
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def test_teach_full_confidence_and_scope(tenant_a: Tenant, tenant_b: Tenant) -> None:
    taught = knowledge_teach(principal=tenant_a.principal, rule="prefer pathlib over os.path", type="reflex")
    assert taught.item.confidence == 1.0 and taught.item.project_id == tenant_a.project.id
    with pytest.raises(ForbiddenProject):
        knowledge_teach(principal=tenant_a.principal, rule="x y z", project_id=str(tenant_b.project.id))
    side = knowledge_teach(principal=tenant_a.principal, rule="side rule", project_id=None).item
    assert side.project_id == tenant_a.project.id  # first project fallback
    with pytest.raises(ForbiddenProject):
        knowledge_teach(principal=tenant_a.project_principal, rule="x y z", project_id=str(uuid.uuid4()))
    for bad in ({"type": "rule"}, {"rule": ""}, {"tags": [str(i) for i in range(21)]}):
        with pytest.raises(ValidationFailed):
            knowledge_teach(principal=tenant_a.principal, **{"rule": "a valid rule", **bad})  # type: ignore[arg-type]


def test_action_item_tag_contract(tenant_a: Tenant) -> None:
    ok = knowledge_teach(principal=tenant_a.principal, type="action_item", rule="fix flaky test",
                         tags=["Action-Item", "for:Alice@A.example", "meeting:2026-11-30-standup", "blocker"])
    assert ok.item.tags == ["action-item", "for:alice@a.example", "meeting:2026-11-30-standup", "blocker"]
    for tags in (["for:alice@a.example"], ["action-item"], ["open-question", "for:x@y.z", "meeting:monday"]):
        with pytest.raises(ValidationFailed):
            knowledge_teach(principal=tenant_a.principal, type="action_item", rule="fix flaky test", tags=tags)


def test_supersede_only_own_same_project(tenant_a: Tenant, tenant_b: Tenant) -> None:
    old = knowledge_teach(principal=tenant_a.principal, rule="use black", project_id=str(tenant_a.project.id)).item
    foreign = knowledge_teach(principal=tenant_b.principal, rule="bob uses yapf").item
    new = knowledge_teach(principal=tenant_a.principal, rule="use ruff format", supersedes_knowledge_id=str(old.id))
    assert new.superseded_id == old.id
    old.refresh_from_db()
    assert old.superseded_by_id == new.item.id
    ignored = knowledge_teach(principal=tenant_a.principal, rule="use ruff", supersedes_knowledge_id=str(foreign.id))
    assert ignored.superseded_id is None and ignored.item.id
    foreign.refresh_from_db()
    assert foreign.superseded_by_id is None


def test_supersede_ignores_other_project(tenant_a: Tenant) -> None:
    from sessions.services.open import session_open

    other = session_open(principal=tenant_a.principal, project_name="Other").session.project
    there = knowledge_teach(principal=tenant_a.principal, rule="use isort", project_id=str(other.id)).item
    here = knowledge_teach(principal=tenant_a.principal, rule="use ruff isort", supersedes_knowledge_id=str(there.id))
    assert here.superseded_id is None
    assert KnowledgeItem.objects.get(id=there.id).superseded_by_id is None


def test_user_style_and_peer_card(tenant_a: Tenant, tenant_b: Tenant) -> None:
    for i in range(3):
        knowledge_teach(principal=tenant_a.principal, rule=f"reflex number {i}", type="reflex")
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content="weak reflex", type="reflex", confidence=0.5),
        KnowledgeDraft(content="strong-ish reflex", type="reflex", confidence=0.8),
    ])
    peer_card_set(user=tenant_a.user, facts={"editor": "neovim", "tone": "terse", "empty": ""})
    style = user_style(principal=tenant_a.principal)
    assert style.peer_card.facts == {"editor": "neovim", "tone": "terse"}
    assert [r.confidence for r in style.reflexes] == [1.0, 1.0, 1.0, 0.8]
    other = user_style(principal=tenant_b.principal)
    assert other == UserStyle(peer_card=PeerCardView(email="bob@b.example", facts={}, updated_at=None), reflexes=[])
    with pytest.raises(ValidationFailed):
        peer_card_set(user=tenant_a.user, facts={f"k{i}": "v" for i in range(41)})


def test_skills_offer_only_mature_stages(tenant_a: Tenant, tenant_b: Tenant) -> None:
    knowledge_create_many(owner=tenant_a.user, project=tenant_a.project, drafts=[
        KnowledgeDraft(content="release checklist: tag, build wheel, upload to PyPI", type="skill",
                       trigger="publishing a python package", stage="wisdom", confidence=0.9),
        KnowledgeDraft(content="draft: publish a python package by hand", type="skill",
                       trigger="publishing a python package", stage="inbox"),
        KnowledgeDraft(content="set up a postgres replica", type="skill", trigger="database replication",
                       stage="knowledge"),
    ])
    found = skills_find(principal=tenant_a.principal, query="how do I publish my python package?", limit=5)
    assert found.skills[0].content.startswith("release checklist")
    assert all(s.stage in ("knowledge", "wisdom") for s in found.skills)
    assert {s.stage for s in skills_active(principal=tenant_a.principal)} == {"knowledge", "wisdom"}
    assert skills_find(principal=tenant_b.principal, query="publish a python package").skills == []
    assert skills_active(principal=tenant_b.principal) == []
    with pytest.raises(ValidationFailed):
        skills_find(principal=tenant_a.principal, query="  ")
