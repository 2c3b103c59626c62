"""Pure rules of a session close: the quality score, learnings validation and the ask-back hint."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_LEARNINGS = 5
LEARNING_TYPES = ("reflex", "recipe", "heuristic", "principle", "anti_principle")
LEARNING_SOURCES = ("user_correction", "decision", "discovery")
FEEDBACK_VALUES = {"up": 1.0, "down": 0.0}
_LIMITS = {"trigger": 500, "rule": 2000, "rationale": 2000}
LEARNING_LIMITS = _LIMITS  # published in the tool schema (mcpgw.schemas_brain.LearningIn)

HINT_STRONG = (
    "This session went wrong and no learning was handed over. Capture the correction NOW with "
    "brain_teach_knowledge (trigger, rule, rationale) so the next session does not repeat it."
)
HINT_GENTLE = (
    "No learnings came with this close. If the session taught anything durable, store it with "
    "brain_teach_knowledge; the next session will get it injected."
)


@dataclass(frozen=True)
class Scores:
    build: float
    feedback: float
    diff_acceptance: float
    penalty: float
    sqs: int


def quality_score(
    *, success: bool, errors: int, user_feedback: str | None, files_created: int, files_modified: int,
    files_rejected: int, build_attempts: int,
) -> Scores:
    """SQS 0-100 = round(100 * (0.40 build + 0.25 feedback + 0.25 diff acceptance + 0.10 (1 - penalty)))."""
    build = 1.0 if success else (0.0 if errors > 0 else 0.5)
    feedback = FEEDBACK_VALUES.get(user_feedback or "", 0.5)
    kept = files_created + files_modified
    diff = kept / (kept + files_rejected) if kept + files_rejected > 0 else 0.5
    penalty = min(max(build_attempts - 1, 0) * 0.1, 0.5)
    raw = 100 * (0.40 * build + 0.25 * feedback + 0.25 * diff + 0.10 * (1 - penalty))
    # Half-up rounding on a value cleaned of float noise (0.55 * 100 must give 55, not 54.999...).
    sqs = math.floor(round(raw, 6) + 0.5)
    return Scores(build, feedback, round(diff, 4), round(penalty, 2), sqs)


@dataclass
class LearningsVerdict:
    accepted: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)


def _text(item: dict[str, Any], key: str, required: bool) -> str:
    value = item.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    value = value.strip()
    if required and len(value) < 3:
        raise ValueError(f"{key} is required (at least 3 characters)")
    if len(value) > _LIMITS[key]:
        raise ValueError(f"{key} is longer than {_LIMITS[key]} characters")
    return value


def _choice(item: dict[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = item.get(key) or default
    if value not in allowed:
        raise ValueError(f"{key} must be one of {', '.join(allowed)}")
    return str(value)


def _confidence(item: dict[str, Any]) -> float:
    value = item.get("confidence", 0.8)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValueError("confidence must be a number between 0 and 1")
    return float(value)


def learning_clean(item: Any) -> dict[str, Any]:
    """One learning in canonical form, or ValueError saying what is wrong with it."""
    if not isinstance(item, dict):
        raise ValueError("a learning must be an object with trigger, rule and rationale")
    return {
        "trigger": _text(item, "trigger", True), "rule": _text(item, "rule", True),
        "rationale": _text(item, "rationale", False),
        "type": _choice(item, "type", LEARNING_TYPES, "heuristic"),
        "source": _choice(item, "source", LEARNING_SOURCES, "discovery"), "confidence": _confidence(item),
    }


def learnings_validate(items: list[Any] | None) -> LearningsVerdict:
    """The first five learnings are judged one by one; the rest and the invalid ones are dropped with a reason.
    Past the first five, MAX_LEARNINGS more are named one by one and the rest in one entry: a close that sent
    half a million items (a megabyte of `0,`) got as many reasons back and stored them with the session."""
    verdict = LearningsVerdict()
    items = items or []
    for index, item in enumerate(items[:MAX_LEARNINGS]):
        try:
            verdict.accepted.append((index, learning_clean(item)))
        except ValueError as exc:
            verdict.dropped.append({"index": index, "reason": str(exc)})
    kept = f"only the first {MAX_LEARNINGS} learnings are kept"
    named = items[MAX_LEARNINGS:2 * MAX_LEARNINGS]
    verdict.dropped += [{"index": MAX_LEARNINGS + n, "reason": kept} for n in range(len(named))]
    rest = len(items) - 2 * MAX_LEARNINGS
    if rest > 0:
        verdict.dropped.append({"index": 2 * MAX_LEARNINGS,
                                "reason": f"{kept}: this one and the {rest - 1} after it were not read"})
    return verdict


def ask_back_hint(*, learnings_submitted: int, success: bool, user_feedback: str | None) -> str | None:
    """The nudge of a learning-less close: strong after failure or thumbs-down, gentle otherwise; none when the agent
    sent learnings, even if all were dropped (the spec: absent when learnings were submitted; the dropped ones come
    back with their reasons)."""
    if learnings_submitted > 0:
        return None
    return HINT_STRONG if (not success or user_feedback == "down") else HINT_GENTLE
