"""Nightly evolution of one scope: merge near-duplicates, age out stale framework rules, record
contradictions, and write a health snapshot. Every step is a no-op when rerun with the same `as_of`."""

from __future__ import annotations

import logging
import re
import statistics
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from pgvector.django import CosineDistance

from brain.logs import log_op
from knowledge.llm import HEURISTIC, LlmUnavailable, complete, configured_model
from knowledge.llm_json import MalformedReply, parse_json_reply
from knowledge.models import Contradiction, HealthSnapshot, KnowledgeItem, KnowledgeType, review_clear
from knowledge.nightly import NightlyScope
from knowledge.selectors.search import decay_floor
from knowledge.services.dream_proposals import AGE_OUT, propose_fade, propose_merge

logger = logging.getLogger(__name__)

MERGE_SIMILARITY = 0.92
CONTRADICTION_SIMILARITY = 0.8
SAME_WORDING = 0.6  # share of words two rules must have in common (polarity words aside) to oppose each other
AGE_OUT_DAYS = 180
AGE_OUT_FACTOR = 0.5
AGED_TAG = "aged_out"
USED_RECENTLY_DAYS = 30
_UNMERGED = (KnowledgeType.ACTION_ITEM, KnowledgeType.SKILL)
_POSITIVE_TYPES = (KnowledgeType.REFLEX, KnowledgeType.PRINCIPLE)
_NEGATION = re.compile(r"\b(never|not|no|don'?t|do not|avoid|stop)\b", re.IGNORECASE)
_POLARITY = re.compile(r"\b(always|never|not|no|don'?t|do not|avoid|stop|must|should|prefer)\b", re.IGNORECASE)
_WORDS = re.compile(r"[a-z0-9_./+-]+")
CONFIRM_SYSTEM = (
    "Two stored coding rules may contradict each other. Reply with JSON only: "
    '{"contradiction": true|false}. True only when following one rule means breaking the other.'
)


@dataclass(frozen=True)
class EvolutionReport:
    merged: int
    aged: int
    contradictions: int


def _live(scope: NightlyScope) -> Q:
    return scope.filter() & review_clear() & Q(deleted_at__isnull=True, superseded_by__isnull=True)


def _neighbours(scope: NightlyScope, item: KnowledgeItem, similarity: float) -> list[KnowledgeItem]:
    return list(
        # Only vectors of the row's own model: across models a distance means nothing (after a provider change,
        # until the backfill has re-embedded every row).
        KnowledgeItem.objects.filter(_live(scope), embedding__isnull=False, embedding_model=item.embedding_model)
        .exclude(id=item.id)
        .annotate(distance=CosineDistance("embedding", item.embedding)).filter(distance__lte=1 - similarity)
        .order_by("distance")[:20]
    )


def merge_into(survivor: KnowledgeItem, twin: KnowledgeItem) -> bool:
    """Folds `twin` into `survivor` (counters summed, tags and source appended), once: both rows are locked and read
    again, so a second run, or an approval, that meets the pair after another folded it changes nothing (it added
    the twin's counters to the survivor twice, and wrote back tags as read minutes before). False: not folded."""
    live = {row.id: row for row in KnowledgeItem.objects.select_for_update().filter(
        id__in=[survivor.id, twin.id], deleted_at__isnull=True, superseded_by__isnull=True).order_by("id")}
    if len(live) < 2:
        return False
    kept, folded = live[survivor.id], live[twin.id]
    extra = [t for t in [*folded.tags, f"source:{folded.source}" if folded.source else ""] if t and t not in kept.tags]
    tags = [*kept.tags, *extra][:40]
    KnowledgeItem.objects.filter(id=kept.id).update(
        success_count=F("success_count") + folded.success_count,
        failure_count=F("failure_count") + folded.failure_count, tags=tags)
    KnowledgeItem.objects.filter(id=folded.id).update(superseded_by=kept)
    survivor.tags = tags
    return True


def merge_duplicates(scope: NightlyScope, propose_to: uuid.UUID | None = None) -> int:
    """Same-type live rows above cosine 0.92 fold into the oldest: counters summed, tags and sources appended.
    With `propose_to` (a dream run) each merge is proposed for review instead (services/dream_proposals.py)."""
    merged = 0
    rows = KnowledgeItem.objects.filter(_live(scope), embedding__isnull=False).exclude(type__in=_UNMERGED)
    for item in rows.order_by("created_at", "id"):
        if KnowledgeItem.objects.filter(id=item.id, superseded_by__isnull=True).exists() is False:
            continue
        with transaction.atomic():
            for twin in _neighbours(scope, item, MERGE_SIMILARITY):
                newer = (twin.created_at, twin.id) > (item.created_at, item.id)
                # Near-identical wording with opposite polarity is a contradiction, never a duplicate.
                # A pinned row is never folded away: it would leave retrieval like a faded one.
                if twin.type == item.type and newer and not twin.pinned and not opposes(item, twin):
                    if propose_to is None:
                        if not merge_into(item, twin):
                            continue
                    elif not propose_merge(propose_to, item, twin, 1 - float(getattr(twin, "distance", 0.0))):
                        continue
                    merged += 1
    return merged


def age_out(scope: NightlyScope, as_of: datetime, propose_to: uuid.UUID | None = None) -> int:
    """Framework rules unused for 180 days lose half their confidence, once (tagged aged_out); with
    `propose_to` (a dream run) each is proposed to fade instead."""
    cutoff = as_of - timedelta(days=AGE_OUT_DAYS)
    stale = KnowledgeItem.objects.filter(_live(scope)).exclude(framework="").exclude(tags__contains=[AGED_TAG]).filter(
        Q(last_used_at__lte=cutoff) | Q(last_used_at__isnull=True, created_at__lte=cutoff)
    ).exclude(type__in=(KnowledgeType.DECISION, KnowledgeType.ACTION_ITEM)).exclude(pinned=True)  # never fade
    if propose_to is not None:
        return sum(propose_fade(propose_to, item, AGE_OUT, f"Framework rule unused for {AGE_OUT_DAYS} days: its "
                                f"confidence would halve ({item.confidence:.2f} to "
                                f"{item.confidence * AGE_OUT_FACTOR:.2f}).") for item in stale)
    aged = 0
    with transaction.atomic():
        for item in stale.select_for_update():
            item.confidence = round(item.confidence * AGE_OUT_FACTOR, 6)
            item.tags = [*item.tags, AGED_TAG]
            item.save(update_fields=["confidence", "tags", "updated_at"])
            aged += 1
    return aged


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(_POLARITY.sub(" ", text.lower())))


def opposes(first: KnowledgeItem, second: KnowledgeItem) -> bool:
    """Near-identical wording with opposite polarity (by type, or by negation words)."""
    a, b = _words(first.content), _words(second.content)
    if not a or not b or len(a & b) / len(a | b) < SAME_WORDING:
        return False
    types = {first.type, second.type}
    if KnowledgeType.ANTI_PRINCIPLE in types and types & set(_POSITIVE_TYPES):
        return True
    return bool(_NEGATION.search(first.content)) != bool(_NEGATION.search(second.content))


def _confirmed(first: KnowledgeItem, second: KnowledgeItem, model: str) -> bool:
    if model == HEURISTIC:
        return True
    try:
        reply = parse_json_reply(complete(system=CONFIRM_SYSTEM, model=model, max_tokens=50,
                                          prompt=f"Rule A: {first.content}\nRule B: {second.content}"))
    except (LlmUnavailable, MalformedReply) as exc:
        log_op(logger, "evolution.confirm_failed", level=logging.WARNING, model=model, reason=str(exc)[:200])
        return True  # the heuristic already found it; a human reviews every recorded pair anyway
    return isinstance(reply, dict) and reply.get("contradiction") is True


def _record(scope: NightlyScope, first: KnowledgeItem, second: KnowledgeItem, similarity: float, model: str,
            as_of: datetime) -> None:
    kind = "anti_principle" if KnowledgeType.ANTI_PRINCIPLE in {first.type, second.type} else "polarity"
    Contradiction.objects.get_or_create(first=first, second=second, defaults={
        "owner_id": first.owner_id, "project_id": scope.project_id, "similarity": round(similarity, 4),
        "reason": kind, "confirmed_by": model, "detected_on": as_of.date()})


def find_contradictions(scope: NightlyScope, as_of: datetime) -> int:
    """Records each opposing pair once (older row first); with a model configured, only pairs it confirms."""
    model, found = configured_model(), 0
    rows = KnowledgeItem.objects.filter(_live(scope), embedding__isnull=False).exclude(type__in=_UNMERGED)
    for item in rows.order_by("created_at", "id"):
        for other in _neighbours(scope, item, CONTRADICTION_SIMILARITY):
            first, second = sorted((item, other), key=lambda r: (r.created_at, r.id))
            if first.id != item.id or not opposes(first, second):
                continue
            if Contradiction.objects.filter(first=first, second=second).exists():
                continue
            if _confirmed(first, second, model):  # the model call happens outside any transaction
                _record(scope, first, second, 1 - float(getattr(other, "distance", 0.0)), model, as_of)
                found += 1
    return found


def health_snapshot(scope: NightlyScope, as_of: datetime) -> HealthSnapshot:
    """Active rows, rows used in the last 30 days, average confidence, median age, open contradictions."""
    active = list(KnowledgeItem.objects.filter(_live(scope)).exclude(type=KnowledgeType.ACTION_ITEM)
                  .filter(Q(decay_score__gt=decay_floor()) | Q(type=KnowledgeType.DECISION))
                  .values("confidence", "created_at", "last_used_at"))
    recent = as_of - timedelta(days=USED_RECENTLY_DAYS)
    open_pairs = Contradiction.objects.filter(resolved_at__isnull=True).filter(
        Q(first__project_id=scope.project_id) if scope.project_id
        else Q(first__owner_id=scope.owner_id, first__project__isnull=True))
    values = {
        "active": len(active),
        "used_last_30_days": sum(1 for r in active if r["last_used_at"] and recent <= r["last_used_at"] <= as_of),
        "average_confidence": round(statistics.fmean([r["confidence"] for r in active]), 4) if active else 0.0,
        "median_age_days": round(statistics.median([(as_of - r["created_at"]).total_seconds() / 86400
                                                    for r in active]), 2) if active else 0.0,
        "contradictions": open_pairs.count(),
    }
    snapshot, _ = HealthSnapshot.objects.update_or_create(
        owner_id=scope.owner_id, project_id=scope.project_id, as_of=as_of.date(), defaults=values)
    return snapshot


def evolution_scope_run(*, scope: NightlyScope, as_of: datetime, propose_to: uuid.UUID | None = None
                        ) -> EvolutionReport:
    """Runs the four evolution steps for one scope and logs one `evolution.run` line. With `propose_to` (the
    dream cycle's run), merges and age-outs are proposed for review rather than applied."""
    report = EvolutionReport(merged=merge_duplicates(scope, propose_to), aged=age_out(scope, as_of, propose_to),
                             contradictions=find_contradictions(scope, as_of))
    snapshot = health_snapshot(scope, as_of)
    log_op(logger, "evolution.run", scope=scope.key, asOf=as_of.isoformat(), merged=report.merged, aged=report.aged,
           contradictions=report.contradictions, active=snapshot.active, proposed=propose_to is not None)
    return report
