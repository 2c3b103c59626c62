"""Autoskill: score a closed session's correction and approval signals and propose what scores enough.

Weights: an explicit user correction 5, each repetition of an implicit signal 3 (its first time 2:
a single rejected file is a hint, not a rule), an approval 1. Near-duplicate candidates are merged;
when they disagree (one says always, the other never), the side with the higher score wins, the later
signal on a tie. Candidates below 3 are dropped. Proposals wait for a human (knowledge/proposals.py)."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from django.db import transaction
from django.db.models import Q
from pgvector.django import CosineDistance

from brain.logs import log_op
from knowledge.models import KnowledgeItem, KnowledgeType
from knowledge.services.create import embed_or_none
from knowledge.services.proposals import ProposalDraft, proposal_record_many
from sessions.findings import CORRECTION_EVENTS, REJECTED_EVENTS
from sessions.models import Session, SessionEvent
from sessions.services.jobs import Claim

logger = logging.getLogger(__name__)

EXPLICIT, REPEATED, SINGLE, APPROVAL = 5, 3, 2, 1
MIN_SCORE = 3
SKILL_MATCH_SIMILARITY = 0.6
# What brain_log_event accepts: an accepted file or an applied rule approves; a rejected rule is an
# implicit correction (its text is the reason given).
APPROVAL_EVENTS = ("approval", "file_accepted", "knowledge_applied")
IMPLICIT_EVENTS = ("knowledge_rejected",)
_NEGATIVE = re.compile(r"\b(never|don'?t|do not|avoid|stop)\b", re.IGNORECASE)
_POLARITY_WORDS = re.compile(r"\b(always|never|don'?t|do not|avoid|stop|please|we use)\b", re.IGNORECASE)
_WORDS = re.compile(r"[a-z0-9_./-]+")


@dataclass
class Candidate:
    text: str
    negative: bool
    score: int = 0
    last_seen: int = 0
    signals: list[dict[str, object]] = field(default_factory=list)


def _key(text: str) -> str:
    """Near-duplicate key: the words without polarity or filler, order-insensitive."""
    return " ".join(sorted(set(_WORDS.findall(_POLARITY_WORDS.sub(" ", text.lower())))))


def _signal_text(event: SessionEvent) -> str:
    if event.event_type in REJECTED_EVENTS:
        path = str(event.payload.get("path") or event.payload.get("file") or event.content).strip()
        return f"Do not change {path} without asking first" if path else ""
    return " ".join((event.content or str(event.payload.get("text") or "")).split())


def _collect(events: Sequence[SessionEvent]) -> dict[str, dict[bool, Candidate]]:
    groups: dict[str, dict[bool, Candidate]] = {}
    for order, event in enumerate(events):
        kinds = (*CORRECTION_EVENTS, *REJECTED_EVENTS, *IMPLICIT_EVENTS, *APPROVAL_EVENTS)
        text = _signal_text(event) if event.event_type in kinds else ""
        if len(text) < 10:
            continue
        negative = event.event_type in REJECTED_EVENTS or bool(_NEGATIVE.search(text))
        side = groups.setdefault(_key(text), {})
        candidate = side.setdefault(negative, Candidate(text=text, negative=negative))
        if event.event_type in CORRECTION_EVENTS:
            weight, kind = EXPLICIT, "explicit"
        elif event.event_type in APPROVAL_EVENTS:
            weight, kind = APPROVAL, "approval"
        else:
            repeated = any(s["kind"] in ("single", "repeated") for s in candidate.signals)
            weight, kind = (REPEATED, "repeated") if repeated else (SINGLE, "single")
        candidate.score += weight
        candidate.last_seen = order
        candidate.signals.append({"kind": kind, "event": event.event_type, "weight": weight})
    return groups


def score_candidates(events: Sequence[SessionEvent]) -> list[Candidate]:
    """One winner per near-duplicate group, scored, with everything under 3 dropped (best first)."""
    winners = [
        max(sides.values(), key=lambda c: (c.score, c.last_seen))
        for sides in _collect(events).values()
    ]
    return sorted((c for c in winners if c.score >= MIN_SCORE), key=lambda c: (-c.score, c.text))


def _skill_for(session: Session, vector: list[float] | None, model: str) -> KnowledgeItem | None:
    if vector is None:
        return None
    return (
        # A skill of the session's project or a personal one: a patch never reaches into another project.
        KnowledgeItem.objects.filter(Q(project=session.project_id) | Q(project__isnull=True), owner=session.user,
                                     type=KnowledgeType.SKILL, deleted_at__isnull=True, embedding__isnull=False,
                                     embedding_model=model)
        .annotate(distance=CosineDistance("embedding", vector))
        .filter(distance__lte=1 - SKILL_MATCH_SIMILARITY)
        .order_by("distance").first()
    )


def _draft(session: Session, candidate: Candidate, skill: KnowledgeItem | None) -> ProposalDraft:
    digest = hashlib.sha1(_key(candidate.text).encode()).hexdigest()[:16]  # noqa: S324 - a key, not security
    rule = candidate.text.rstrip(".") + "."
    draft = ProposalDraft(
        target_key=f"new:{digest}", kind="new_knowledge", content=rule, score=candidate.score,
        type=KnowledgeType.ANTI_PRINCIPLE if candidate.negative else KnowledgeType.REFLEX,
        trigger=f"when working on: {(session.prompt or session.project.name)[:80]}",
        rationale=f"Autoskill: signals scored {candidate.score} in one session.", signals=candidate.signals,
    )
    if skill is None:
        return draft
    return replace(draft, target_key=f"skill:{skill.id}:{digest}", kind="skill_patch", target_id=skill.id)


def autoskill_work(session: Session, claim: Claim | None) -> int:
    """The autoskill job: proposals for what the session's signals support; finishes the claim with them."""
    candidates = score_candidates(list(session.events.all()))
    texts = [c.text for c in candidates]
    vectors, model = embed_or_none(texts, op="autoskill.embed_failed") if candidates else (None, "")
    drafts = [_draft(session, c, _skill_for(session, vectors[i] if vectors else None, model))
              for i, c in enumerate(candidates)]
    with transaction.atomic():
        created = proposal_record_many(owner=session.user, project=session.project, session_id=session.id,
                                       drafts=drafts)
        if claim is not None:
            claim.finish(items=created)
    log_op(logger, "autoskill.proposals", sessionId=str(session.id)[:8], candidates=len(candidates), created=created)
    return created
