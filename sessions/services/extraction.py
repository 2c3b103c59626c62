"""KEA, the per-session extraction: mine a closed session (no learnings) or refine its captured
learnings, filter for quality, dedup semantically, persist, and log the funnel.

Model calls and embeddings happen before any transaction; the write and the job's completion commit
together (see sessions/jobs.py)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from brain.logs import log_op
from knowledge.llm import HEURISTIC, LlmUnavailable, complete, configured_model
from knowledge.llm_json import MalformedReply, json_list
from knowledge.models import KnowledgeType, SkillStage
from knowledge.services.absorb import AbsorbResult, ScopedDraft, knowledge_absorb
from knowledge.services.quota import llm_quota_claim
from knowledge.services.skills import SKILL_TYPES
from sessions.findings import (
    MAX_MINED,
    MAX_REFINED_CONFIDENCE,
    MIN_CONFIDENCE,
    Finding,
    finding_from_dict,
    judge_heuristic,
    mine_heuristic,
    passes_quality,
)
from sessions.models import Session, SessionEvent
from sessions.services.jobs import Claim

logger = logging.getLogger(__name__)

LEARNING_EVENT = "learning_captured"
_MAX_TRANSCRIPT = 6000
MINE_SYSTEM = (
    "You extract durable coding knowledge from one agent session. Reply with JSON only: "
    '{"findings": [{"type": "reflex|recipe|heuristic|principle|anti_principle", "trigger": "when ...", '
    '"rule": "...", "rationale": "...", "confidence": 0.0-1.0}]}. At most 3 findings; none when the '
    "session taught nothing reusable. Rules must be specific to this user's codebase or habits."
)
JUDGE_SYSTEM = (
    "You review rules an agent captured at the end of a session. Keep only durable, specific rules. Reply "
    'with JSON only: {"verdicts": [{"index": 0, "keep": true, "confidence": 0.0-1.0}]}, one per rule.'
)


@dataclass
class Extraction:
    mode: str  # "mine" | "refine"
    model: str
    submitted: int
    found: list[Finding]
    kept: list[Finding]


def _learnings(events: Sequence[SessionEvent]) -> list[Finding]:
    found = []
    for event in events:
        if event.event_type == LEARNING_EVENT and isinstance(event.payload, dict):
            finding = finding_from_dict(event.payload, default_source="discovery")
            if finding is not None:
                found.append(finding)
    return found


def _transcript(session: Session, events: Sequence[SessionEvent]) -> str:
    lines = [f"task: {session.prompt}", f"framework: {session.framework or '-'}", f"outcome: {session.outcome}"]
    lines += [f"[{e.event_type}] {e.content or e.payload}" for e in events]
    return "\n".join(lines)[:_MAX_TRANSCRIPT]


def _model_for(session: Session) -> str:
    """The configured model while the user's daily quota lasts; heuristic mode otherwise."""
    model = configured_model()
    if model != HEURISTIC and not llm_quota_claim(user_id=session.user_id):
        log_op(logger, "kea.quota_exhausted", userId=str(session.user_id)[:8], model=model)
        return HEURISTIC
    return model


def _mine(session: Session, events: Sequence[SessionEvent], model: str) -> list[Finding]:
    if model == HEURISTIC:
        return mine_heuristic(session, events)
    reply = complete(system=MINE_SYSTEM, prompt=_transcript(session, events), model=model)
    return [f for f in (finding_from_dict(item) for item in json_list(reply, "findings")) if f]


def _judge(learnings: list[Finding], model: str) -> list[Finding]:
    decisions = [f for f in learnings if f.source == "decision"]  # a decision is the team's call: no judge
    others = [f for f in learnings if f.source != "decision"]
    if model == HEURISTIC:
        return decisions + [f for f in (judge_heuristic(f) for f in others) if f]
    prompt = "\n".join(f"{i}. trigger: {f.trigger} | rule: {f.rule} | rationale: {f.rationale}"
                       for i, f in enumerate(others))
    verdicts = {int(v.get("index", -1)): v for v in json_list(complete(system=JUDGE_SYSTEM, prompt=prompt,
                                                                        model=model), "verdicts")}
    kept = []
    for i, finding in enumerate(others):
        verdict: dict[str, Any] = verdicts.get(i, {})
        if verdict.get("keep") is True:
            judged = float(verdict.get("confidence", finding.confidence))
            kept.append(replace(finding, confidence=min(finding.confidence, judged, MAX_REFINED_CONFIDENCE)))
    return decisions + kept


def _run(session: Session, events: Sequence[SessionEvent], model: str) -> Extraction:
    learnings = _learnings(events)
    if learnings:
        kept = _judge(learnings, model)
        return Extraction("refine", model, len(learnings), learnings, [f for f in kept if passes_quality(f)])
    found = _mine(session, events, model)
    kept = [f for f in found if f.confidence >= MIN_CONFIDENCE and passes_quality(f)]
    return Extraction("mine", model, 0, found, sorted(kept, key=lambda f: -f.confidence)[:MAX_MINED])


def session_extraction_plan(session: Session) -> Extraction:
    """What KEA would persist for a session (no writes besides the quota charge); falls back to the
    heuristic path when the model fails or replies with something unusable, so the session still teaches."""
    events = list(session.events.all())
    model = _model_for(session)
    try:
        return _run(session, events, model)
    except (LlmUnavailable, MalformedReply) as exc:
        log_op(logger, "kea.llm_fallback", level=logging.WARNING, model=model, reason=str(exc)[:200])
        return _run(session, events, HEURISTIC)


def _scoped_drafts(session: Session, extraction: Extraction) -> list[ScopedDraft]:
    drafts: list[ScopedDraft] = []
    for finding in extraction.kept:
        if extraction.mode == "refine" and finding.source == "decision":
            # The team's call skips the judge, not the refine mode's confidence cap (the spec: clamped <= 0.95).
            decision = replace(finding, type=KnowledgeType.DECISION,
                               confidence=min(finding.confidence, MAX_REFINED_CONFIDENCE))
            drafts.append((session.project, decision.draft(framework=session.framework,
                                                             extra_tags=("close_capture", "decision"))))
            continue
        tags = ("close_capture",) if extraction.mode == "refine" else ()
        confidence = min(finding.confidence, MAX_REFINED_CONFIDENCE)
        # A learned row belongs to its session's project; it reaches the owner's scope only once it has proved
        # itself in a second project (knowledge_absorb) or someone promotes it.
        draft = replace(finding, confidence=confidence).draft(framework=session.framework, extra_tags=tags)
        if draft.type in SKILL_TYPES:  # a recipe starts its way up the skill stages (knowledge/services/skills.py)
            draft = replace(draft, stage=SkillStage.INBOX)
        drafts.append((session.project, draft))
    return drafts


def extract_session(session: Session, claim: Claim | None) -> AbsorbResult:
    """Plans, then persists with dedup and finishes the claim in one transaction; logs the funnel."""
    extraction = session_extraction_plan(session)
    drafts = _scoped_drafts(session, extraction)

    def finish(result: AbsorbResult) -> None:
        if claim is not None:
            claim.finish(items=len(result.created))

    result = knowledge_absorb(owner=session.user, drafts=drafts, dedup_project=session.project, before_commit=finish,
                              source_session_id=session.id)
    log_op(logger, "kea.funnel", sessionId=str(session.id)[:8], mode=extraction.mode, model=extraction.model,
           submitted=extraction.submitted, llmFindings=len(extraction.found), filterPassed=len(extraction.kept),
           persisted=len(result.created), merged=len(result.merged))
    return result


def extract_work(session: Session, claim: Claim | None) -> int:
    """The extract job; returns how many rows it created."""
    return len(extract_session(session, claim).created)
