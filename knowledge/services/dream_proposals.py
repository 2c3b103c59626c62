"""What the dream cycle proposes instead of doing: merges (a near-duplicate folded into its older twin) and
fades (a stale framework rule's confidence halved, or a row let decay out of retrieval). Each waits in the
review queue as a `Proposal` of the dream run (`session_id` = the run's id) and is applied only when its owner
approves it. A pinned row is never proposed to fade or to be folded away, and is refused at approval too."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import F

from brain.errors import Conflict
from knowledge.models import (
    PROPOSAL_TARGET_KEY_MAX,
    KnowledgeItem,
    Proposal,
    ProposalKind,
    ProposalStatus,
)

AGE_OUT = "age_out"
RETIRE = "retire"
DREAM_SCORE = 3  # between autoskill's scores: a reviewer sees dream proposals after strong corrections


def _record(run_id: uuid.UUID, item: KnowledgeItem, kind: str, rationale: str, signals: dict[str, Any]) -> bool:
    """One proposal per (change, row) across runs: a later run repeats neither a waiting one nor one a person
    rejected (they said no; the nightly jobs still apply decay and evolution on their own schedule)."""
    key = f"{kind}:{item.id}"[:PROPOSAL_TARGET_KEY_MAX]
    if Proposal.objects.filter(target_key=key, status__in=[ProposalStatus.PENDING, ProposalStatus.REJECTED]).exists():
        return False
    _, created = Proposal.objects.get_or_create(session_id=run_id, target_key=key, defaults={
        "owner_id": item.owner_id, "project_id": item.project_id, "kind": kind, "target": item, "type": item.type,
        "trigger": item.trigger, "content": item.content, "rationale": rationale, "score": DREAM_SCORE,
        "signals": [signals]})
    return created


def propose_merge(run_id: uuid.UUID, survivor: KnowledgeItem, twin: KnowledgeItem, similarity: float) -> bool:
    return _record(run_id, twin, ProposalKind.MERGE,
                   f"Near-duplicate (cosine {similarity:.2f}) of an older rule, which would keep its counters and "
                   f"tags: {survivor.content[:300]}", {"into": str(survivor.id), "similarity": round(similarity, 4)})


def propose_fade(run_id: uuid.UUID, item: KnowledgeItem, how: str, rationale: str, **signals: Any) -> bool:
    return _record(run_id, item, ProposalKind.FADE, rationale, {"fade": how, **signals})


def _live(item_id: Any, owner_id: Any) -> KnowledgeItem:
    row = KnowledgeItem.objects.select_for_update().filter(
        id=item_id, owner_id=owner_id, deleted_at__isnull=True, superseded_by__isnull=True).first()
    if row is None:
        raise Conflict("the rule changed since this was proposed (deleted or superseded); reject the proposal")
    return row


def dream_proposal_apply(proposal: Proposal) -> KnowledgeItem:
    """Does what a merge or fade proposal says, inside the approver's transaction; returns the changed row."""
    signals = proposal.signals[0] if proposal.signals else {}
    item = _live(proposal.target_id, proposal.owner_id)
    if item.pinned:
        raise Conflict("the rule is pinned: pinned rules never fade nor fold away; reject the proposal")
    from knowledge.services.evolution import AGE_OUT_FACTOR, AGED_TAG, merge_into  # evolution imports this module

    if proposal.kind == ProposalKind.MERGE:
        survivor = _live(signals.get("into"), proposal.owner_id)
        merge_into(survivor, item)  # both were just locked live by `_live`
        return survivor
    if signals.get("fade") == AGE_OUT:
        KnowledgeItem.objects.filter(id=item.id).update(confidence=F("confidence") * AGE_OUT_FACTOR,
                                                        tags=[*item.tags, AGED_TAG])
    else:
        KnowledgeItem.objects.filter(id=item.id).update(decay_score=float(signals["decay"]))
    item.refresh_from_db()
    return item
