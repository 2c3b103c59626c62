"""`brain guard calibrate`: measures where the semantic guard should warn, for the embedding model in use.

Labelled pairs of (stored forbidden action, planned action) are embedded the way the guard sees them (the
stored rule as trigger + text, the action as a query) and scored by cosine similarity. The threshold kept is
the lowest one that still leaves at most 1% of the non-matches warning (a warning that fires on ordinary
work teaches agents to ignore it), placed halfway to the next lower score so it is not balanced on one
sample. Pairs come from the built-in
set (knowledge/guard_pairs.py) or from a scope's stored forbidden actions, where each row's own trigger is
a match and every other row's trigger a non-match."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Q

from brain.errors import ValidationFailed
from knowledge.embeddings import embed_texts
from knowledge.guard_models import GuardCalibration
from knowledge.guard_pairs import BENIGN, FORBIDDEN
from knowledge.models import KnowledgeItem, KnowledgeType, review_clear
from knowledge.selectors.guard import calibration_cache_clear
from knowledge.services.create import knowledge_embedding_text
from projects.models import Project, User

SCOPE_ROWS_MAX = 200
# Share of non-matching pairs allowed to warn. The guard compares an action with every stored forbidden
# action, so a per-pair rate p becomes about 1 - (1 - p)^N false warnings per action over N rows: kept small.
MAX_FALSE_WARNINGS = 0.01


@dataclass(frozen=True)
class Labelled:
    rules: list[str]  # what is stored (trigger + text, as embedded for the guard)
    actions: list[str]
    matches: set[tuple[int, int]]  # (rule index, action index) pairs that should warn; every other pair should not


@dataclass(frozen=True)
class Calibration:
    model: str
    source: str
    threshold: float
    matches: list[float]
    non_matches: list[float]
    true_positive_rate: float
    false_positive_rate: float

    def as_dict(self) -> dict[str, Any]:
        return {"embeddingModel": self.model, "source": self.source, "threshold": round(self.threshold, 4),
                "truePositiveRate": self.true_positive_rate, "falsePositiveRate": self.false_positive_rate,
                "matches": _spread(self.matches), "nonMatches": _spread(self.non_matches)}


def _spread(scores: list[float]) -> dict[str, float | int]:
    ordered = sorted(scores)
    cut = statistics.quantiles(ordered, n=10, method="inclusive") if len(ordered) > 1 else ordered * 9
    return {"n": len(ordered), "min": round(ordered[0], 3), "p10": round(cut[0], 3),
            "p50": round(statistics.median(ordered), 3), "p90": round(cut[8], 3), "max": round(ordered[-1], 3)}


def builtin_pairs() -> Labelled:
    rules = [knowledge_embedding_text(trigger=t, content=c) for t, c, _ in FORBIDDEN]
    actions = [a for _, _, a in FORBIDDEN] + list(BENIGN)
    return Labelled(rules, actions, {(i, i) for i in range(len(FORBIDDEN))})


def scope_pairs(*, owner: User, project: Project | None) -> Labelled:
    """The scope's live forbidden actions that name a trigger: each matches its own trigger and no other."""
    scope = Q(project=project) if project else Q(owner=owner, project__isnull=True)
    rows = list(KnowledgeItem.objects.filter(scope, review_clear(), type=KnowledgeType.ANTI_PRINCIPLE,
                                             deleted_at__isnull=True, superseded_by__isnull=True)
                .exclude(trigger="").order_by("created_at")[:SCOPE_ROWS_MAX])
    triggers = sorted({" ".join(r.trigger.split()).lower() for r in rows})
    if len(triggers) < 2:
        raise ValidationFailed("the scope needs at least 2 stored forbidden actions with different triggers "
                               f"to calibrate on (it has {len(triggers)}); leave out --email to use the built-in set")
    rules = [knowledge_embedding_text(trigger=r.trigger, content=r.content) for r in rows]
    pairs = {(i, triggers.index(" ".join(r.trigger.split()).lower())) for i, r in enumerate(rows)}
    return Labelled(rules, triggers, pairs)


def _scores(labelled: Labelled) -> tuple[list[float], list[float], str]:
    vectors, model = embed_texts([*labelled.rules, *labelled.actions])  # normalised: dot = cosine
    matrix = np.asarray(vectors, dtype=np.float32)
    cosine = matrix[: len(labelled.rules)] @ matrix[len(labelled.rules):].T
    matches: list[float] = []
    non_matches: list[float] = []
    for (i, j), value in np.ndenumerate(cosine):
        (matches if (i, j) in labelled.matches else non_matches).append(float(value))
    return matches, non_matches, model


def _rates(threshold: float, matches: list[float], non_matches: list[float]) -> tuple[float, float]:
    return (sum(m >= threshold for m in matches) / len(matches),
            sum(n >= threshold for n in non_matches) / len(non_matches))


def choose_threshold(matches: list[float], non_matches: list[float]) -> float:
    """The lowest cut that catches the most matches while at most MAX_FALSE_WARNINGS of the non-matches reach
    it (just above every non-match when no cut does), moved halfway down to the next lower score."""
    scores = sorted(set(matches) | set(non_matches))
    fallback = max(non_matches) + 0.001
    cuts = sorted({*matches, fallback})
    allowed = [c for c in cuts if _rates(c, matches, non_matches)[1] <= MAX_FALSE_WARNINGS] or [fallback]
    best = max(allowed, key=lambda c: (_rates(c, matches, non_matches)[0], c))
    below = [s for s in scores if s < best]
    return best if best == fallback or not below else (best + below[-1]) / 2


def guard_calibrate(*, labelled: Labelled, source: str, store: bool = True) -> Calibration:
    """Scores the pairs, chooses the threshold and (unless `store` is false) records it for the guard."""
    matches, non_matches, model = _scores(labelled)
    if not matches or not non_matches:
        raise ValidationFailed("calibration needs both matching and non-matching pairs")
    threshold = round(choose_threshold(matches, non_matches), 4)
    tpr, fpr = _rates(threshold, matches, non_matches)
    result = Calibration(model, source, threshold, matches, non_matches, round(tpr, 3), round(fpr, 3))
    if store:
        GuardCalibration.objects.create(embedding_model=model, threshold=threshold, source=source[:80],
                                        matches=len(matches), non_matches=len(non_matches),
                                        true_positive_rate=result.true_positive_rate,
                                        false_positive_rate=result.false_positive_rate)
        calibration_cache_clear()
    return result
