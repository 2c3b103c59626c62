"""A small, realistic project for page tests, built only through the services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from knowledge.models import Contradiction, HealthSnapshot, KnowledgeItem, Proposal
from knowledge.services.curate import knowledge_delete
from knowledge.services.proposals import ProposalDraft, proposal_record_many
from knowledge.services.teach import knowledge_teach
from projects.scope import Principal
from sessions.models import Session
from sessions.services.open import applications_record
from tests.conftest import Tenant
from tests.support.closed_session import closed_session


@dataclass
class World:
    rule: KnowledgeItem
    old: KnowledgeItem
    deleted: KnowledgeItem
    action: KnowledgeItem
    session: Session
    proposal: Proposal


def build_world(tenant: Tenant, word: str, day: int = 1) -> World:
    """Rows whose text carries `word`, so a page of another tenant can be searched for it."""
    who = Principal(user=tenant.user)
    pid = str(tenant.project.id)
    old = knowledge_teach(principal=who, rule=f"{word} migrations run before deploy", project_id=pid).item
    rule = knowledge_teach(principal=who, rule=f"{word} migrations run in a release step", project_id=pid,
                           tags=["deploy"], supersedes_knowledge_id=str(old.id)).item
    deleted = knowledge_teach(principal=who, rule=f"{word} obsolete cache rule", project_id=pid).item
    knowledge_delete(principal=who, item_id=deleted.id)
    action = knowledge_teach(principal=who, rule=f"{word} rotate the staging keys", type="action_item",
                             tags=["action-item", "blocker", f"for:{tenant.user.email}"], project_id=pid).item
    session = closed_session(user=tenant.user, project=tenant.project, prompt=f"{word} deploy the release",
                             events=[("correction", f"{word} no, use the release step", {})])
    Session.objects.filter(id=session.id).update(quality_score=80, client_type="claude-code")
    applications_record(session=session, knowledge_ids=[rule.id], role="injected")
    applications_record(session=session, knowledge_ids=[rule.id], role="used_reported")
    proposal_record_many(owner=tenant.user, project=tenant.project, session_id=session.id, drafts=[
        ProposalDraft(target_key=f"{word}-k", kind="new_knowledge", content=f"{word} always tag releases",
                      score=7, trigger="when releasing")])
    Contradiction.objects.create(owner=tenant.user, project=tenant.project, first=rule, second=deleted,
                                 similarity=0.91, reason="polarity", confirmed_by="heuristic",
                                 detected_on=timezone.localdate())
    HealthSnapshot.objects.create(owner=None, project=tenant.project, as_of=timezone.localdate() - timedelta(days=day),
                                  active=3, used_last_30_days=1, average_confidence=0.9, median_age_days=1,
                                  contradictions=1)
    return World(rule=rule, old=old, deleted=deleted, action=action, session=session,
                 proposal=Proposal.objects.get(session_id=session.id))
