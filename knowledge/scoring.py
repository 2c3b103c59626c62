"""Re-scoring of fused candidates: the one place where relevance meets confidence, outcomes,
recency and context fit. Every score can be explained term by term.

    relevance  = rrf / rrf_max                      (1.0 = ranked first by every active list)
    multiplier = 1 + w_confidence * (confidence - 0.5)
                   + w_success    * (laplace_success_rate - 0.5)   only after >= 3 outcomes
                   + w_recency    * 0.5 ** (days_since_use_or_creation / half_life)
                   + w_context    * share of the context (framework, language, project) the row fits
    score      = relevance * multiplier

Rows below `floor` are cut and at most `max_per_type` rows of one type are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings

from brain.config import overridden

if TYPE_CHECKING:
    from knowledge.search import CandidateSet

MIN_OUTCOMES_FOR_SUCCESS = 3


@dataclass(frozen=True)
class Weights:
    """The product's defaults; `BRAIN_RETRIEVAL` in settings holds only what the environment overrides."""

    confidence: float = 0.30
    success: float = 0.20
    recency: float = 0.10
    context: float = 0.15
    recency_half_life_days: float = 30.0
    floor: float = 0.05
    max_per_type: int = 3

    @classmethod
    def from_settings(cls) -> Weights:
        """These defaults with the `BRAIN_RETRIEVAL_*` overrides the environment sets."""
        return overridden(cls(), settings.BRAIN_RETRIEVAL, renamed=_SETTINGS_KEYS)


# The keys of `settings.BRAIN_RETRIEVAL` named differently from the field they set; the other keys that name
# no field of Weights are the fusion's (`knowledge.search.Fusion`) or the selectors'.
_SETTINGS_KEYS = {"weight_confidence": "confidence", "weight_success": "success", "weight_recency": "recency",
                  "weight_context": "context"}


@dataclass(frozen=True)
class Context:
    """What the caller is working on; empty fields are not scored."""

    framework: str = ""
    language: str = ""
    project_id: Any = None


def success_rate(successes: int, failures: int) -> float | None:
    """Laplace-smoothed success rate, or None before MIN_OUTCOMES_FOR_SUCCESS outcomes."""
    if successes + failures < MIN_OUTCOMES_FOR_SUCCESS:
        return None
    return (successes + 1) / (successes + failures + 2)


def recency(last: datetime | None, now: datetime, half_life_days: float) -> float:
    if last is None:
        return 0.0
    days = max((now - last).total_seconds() / 86400.0, 0.0)
    return math.pow(0.5, days / half_life_days)


def context_fit(row: dict[str, Any], context: Context) -> float | None:
    checks: list[bool] = []
    if context.framework:
        checks.append(row.get("framework", "").lower() == context.framework.lower())
    if context.language:
        checks.append(row.get("language", "").lower() == context.language.lower())
    if context.project_id is not None:
        checks.append(row.get("project_id") == context.project_id)
    return sum(checks) / len(checks) if checks else None


def rescore(*, rrf: float, rrf_max: float, row: dict[str, Any], context: Context, weights: Weights,
            now: datetime, explain: bool = True) -> tuple[float, dict[str, float]]:
    """The final score of one candidate and, with `explain`, the terms that made it (else an empty dict: a session
    open rescores 50 candidates to inject 5, and rounding every term of each was a third of that work)."""
    relevance = rrf / rrf_max if rrf_max > 0 else 0.0
    terms: dict[str, float] = {}
    if "confidence" in row:
        terms["confidence"] = weights.confidence * (float(row["confidence"]) - 0.5)
    rate = success_rate(int(row.get("success_count", 0)), int(row.get("failure_count", 0)))
    if rate is not None:
        terms["success"] = weights.success * (rate - 0.5)
    last = row.get("last_used_at") or row.get("created_at")
    terms["recency"] = weights.recency * recency(last, now, weights.recency_half_life_days)
    fit = context_fit(row, context)
    if fit is not None:
        terms["context"] = weights.context * fit
    multiplier = 1.0 + sum(terms.values())
    score = relevance * multiplier
    if not explain:
        return score, {}
    return score, {"relevance": round(relevance, 6), **{k: round(v, 6) for k, v in terms.items()},
                   "multiplier": round(multiplier, 6), "score": round(score, 6)}


def rescore_candidates(
    found: CandidateSet, *, context: Context, weights: Weights, now: datetime, explain: bool = True,
) -> list[tuple[float, dict[str, float], dict[str, Any]]]:
    """Each candidate's final score, with `explain` its terms (with the ranks and the fused score it came with; else
    an empty dict), and its row, in candidate order."""
    out = []
    for cand in found.candidates:
        score, terms = rescore(rrf=cand.rrf, rrf_max=found.rrf_max, row=cand.row, context=context,
                               weights=weights, now=now, explain=explain)
        if explain:
            terms.update(vec_rank=cand.vec_rank or 0, fts_rank=cand.fts_rank or 0, rrf=round(cand.rrf, 6))
        out.append((score, terms, cand.row))
    return out


def cut(scored: list[tuple[float, str, Any]], *, floor: float, max_per_type: int, limit: int) -> list[Any]:
    """Highest first; drops scores under the floor and rows beyond `max_per_type` of one type."""
    kept: list[Any] = []
    per_type: dict[str, int] = {}
    for score, kind, item in sorted(scored, key=lambda entry: -entry[0]):
        if score < floor or per_type.get(kind, 0) >= max_per_type:
            continue
        per_type[kind] = per_type.get(kind, 0) + 1
        kept.append(item)
        if len(kept) >= limit:
            break
    return kept
