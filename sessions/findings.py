"""Findings: candidate knowledge mined from sessions, the quality filter, and the deterministic miner
that lets a fresh install (no LLM key) learn from explicit corrections and rejected files."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from knowledge.models import KnowledgeType
from knowledge.services.create import KnowledgeDraft
from sessions.models import Session, SessionEvent

MINE_TYPES = frozenset({"reflex", "recipe", "heuristic", "principle", "anti_principle"})
MIN_CONFIDENCE = 0.7
MAX_REFINED_CONFIDENCE = 0.95
MIN_RULE_CHARS = 20
MIN_TRIGGER_CHARS = 10
MAX_MINED = 3
# A rule shorter than this that leans on a generic phrase says nothing specific enough to act on.
GENERIC_RULE_CHARS = 60
GENERIC_PHRASES = (
    "best practice", "clean code", "good code", "be careful", "write tests", "readable", "keep it simple",
    "follow the convention", "make sure", "properly", "good naming", "high quality", "double check",
    "as needed", "when appropriate", "code quality",
)
CORRECTION_EVENTS = ("user_correction", "correction")
REJECTED_EVENTS = ("file_rejected",)
_MARKER = re.compile(r"\b(always|never|we use|don'?t|do not)\b", re.IGNORECASE)
_NEGATIVE = re.compile(r"\b(never|don'?t|do not)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_TRANSIENT = re.compile(r"\b(this time|today|for now|temporarily|right now|this pr|this ticket|in this session)\b",
                        re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    type: str
    trigger: str
    rule: str
    rationale: str
    confidence: float
    source: str = "discovery"
    tags: tuple[str, ...] = field(default_factory=tuple)

    def draft(self, *, framework: str = "", extra_tags: Sequence[str] = ()) -> KnowledgeDraft:
        tags = tuple(dict.fromkeys((*self.tags, *extra_tags)))
        return KnowledgeDraft(
            content=self.rule, type=self.type, trigger=self.trigger, rationale=self.rationale, tags=tags,
            source=self.source, confidence=round(min(max(self.confidence, 0.0), 1.0), 4), framework=framework,
        )


def is_generic(rule: str) -> bool:
    lowered = rule.lower()
    return len(rule) < GENERIC_RULE_CHARS and any(phrase in lowered for phrase in GENERIC_PHRASES)


def passes_quality(finding: Finding) -> bool:
    """Rule ≥ 20 characters, trigger ≥ 10, and not a short rule built on a generic phrase."""
    rule, trigger = finding.rule.strip(), finding.trigger.strip()
    return len(rule) >= MIN_RULE_CHARS and len(trigger) >= MIN_TRIGGER_CHARS and not is_generic(rule)


def finding_from_dict(data: dict[str, Any], *, default_source: str = "discovery") -> Finding | None:
    """A finding from model output or a captured learning; None when a required field is missing or wrong."""
    kind = str(data.get("type") or "").strip()
    rule = str(data.get("rule") or data.get("content") or "").strip()
    if kind not in MINE_TYPES or not rule:
        return None
    try:
        confidence = float(data.get("confidence", 0.8))
    except (TypeError, ValueError):
        return None
    return Finding(type=kind, trigger=str(data.get("trigger") or "").strip(), rule=rule,
                   rationale=str(data.get("rationale") or "").strip(), confidence=confidence,
                   source=str(data.get("source") or default_source))


def _topic(session: Session) -> str:
    prompt = " ".join(session.prompt.split())
    if prompt:
        return prompt[:80]
    return session.framework or session.project.name


def _sentence(text: str) -> str:
    text = " ".join(text.split()).strip(" -*")
    return (text[:1].upper() + text[1:]).rstrip(".") + "." if text else ""


def _corrections(session: Session, events: Iterable[SessionEvent]) -> list[Finding]:
    found = []
    for event in events:
        if event.event_type not in CORRECTION_EVENTS:
            continue
        text = event.content or str(event.payload.get("text") or event.payload.get("correction") or "")
        for piece in _SENTENCES.split(text):
            if not _MARKER.search(piece):
                continue
            kind = KnowledgeType.ANTI_PRINCIPLE if _NEGATIVE.search(piece) else KnowledgeType.REFLEX
            found.append(Finding(
                type=kind, trigger=f"when working on: {_topic(session)}", rule=_sentence(piece),
                rationale=f"The user corrected the agent on {event.occurred_at:%Y-%m-%d}.", confidence=0.8,
                source="user_correction", tags=("user_correction",),
            ))
    return found


def _rejected_paths(session: Session, events: Iterable[SessionEvent]) -> list[tuple[str, str]]:
    paths = [
        (str(e.payload.get("path") or e.payload.get("file") or e.content).strip(),
         str(e.payload.get("reason") or "").strip())
        for e in events if e.event_type in REJECTED_EVENTS
    ]
    outcome = session.outcome if isinstance(session.outcome, dict) else {}
    listed = outcome.get("filesRejected")  # a list of paths when a client sends one (the close stores counts)
    for path in listed if isinstance(listed, list) else []:
        if isinstance(path, str):
            paths.append((path.strip(), ""))
    return [(p, r) for p, r in dict(paths).items() if p]


def _rejections(session: Session, events: Iterable[SessionEvent]) -> list[Finding]:
    found = []
    for path, reason in _rejected_paths(session, events):
        why = f": {reason.rstrip('.')}" if reason else ""
        found.append(Finding(
            type=KnowledgeType.ANTI_PRINCIPLE, trigger=f"when changing {path}",
            rule=f"Do not change {path} without asking first; the user rejected such a change{why}.",
            rationale="A change to this file was rejected in a past session.", confidence=0.75 if reason else 0.7,
            source="user_correction", tags=("file_rejected",),
        ))
    return found


def mine_heuristic(session: Session, events: Sequence[SessionEvent]) -> list[Finding]:
    """Deterministic findings: directive sentences of explicit corrections, then rejected files (unique rules)."""
    unique: dict[str, Finding] = {}
    for finding in [*_corrections(session, events), *_rejections(session, events)]:
        unique.setdefault(finding.rule.lower(), finding)
    return sorted(unique.values(), key=lambda f: -f.confidence)


def judge_heuristic(finding: Finding) -> Finding | None:
    """Refine-mode judge without a model: drops rules tied to the moment, caps confidence at 0.95."""
    if _TRANSIENT.search(finding.rule):
        return None
    return replace(finding, confidence=min(finding.confidence, MAX_REFINED_CONFIDENCE))
