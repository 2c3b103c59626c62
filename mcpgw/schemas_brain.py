"""Pydantic contracts of the brain tools (the MCP inputSchema/outputSchema are generated from these).

snake_case here, camelCase on the wire (the registry's ToolModel aliases every field)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from knowledge.injection import Injection
from knowledge.models import RATIONALE_MAX, RULE_MAX, RULE_MIN, TAG_MAX, TAGS_MAX, TRIGGER_MAX, KnowledgeItem
from knowledge.search import QUERY_MAX
from knowledge.selectors.live import PeerCardView, SkillsFound, UserStyle
from knowledge.selectors.search import KnowledgeHit
from mcpgw.registry import ToolModel
from projects.models import PROJECT_NAME_MAX, STACK_NAME_MAX
from sessions.models import CLIENT_TYPE_MAX, EVENT_TYPE_MAX
from sessions.outcome_rules import LEARNING_LIMITS, LEARNING_SOURCES, LEARNING_TYPES
from sessions.selectors.oracle import OracleAnswer
from sessions.selectors.search import SessionsFound
from sessions.services.open import Retrieved, SessionOpened
from sessions.services.outcome import SessionClosed

ID_MAX = 64  # an id argument (a UUID is 36 characters)
PROMPT_MAX = 8000
SUMMARY_MAX = 4000  # a close's summary
ERROR_MAX = SUMMARY_MAX  # one error of a close, as long as its summary may be
# Items of a list argument carry their own cap, declared in the tool's inputSchema: the list's length alone let one
# item take the whole request body into the stored outcome.
IdItem = Annotated[str, Field(max_length=ID_MAX)]
OMIT_WHEN_NONE = {"relevantKnowledge", "openActionItems", "hint", "injectionNotice"}


def _client_request_id() -> Any:
    """The idempotency key of a creating tool (mcpgw/idempotent.py)."""
    return Field(None, min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$", description=(
        "optional idempotency key (e.g. a UUID): a retry with the same key returns the first result and "
        "stores nothing new; keys live 24 h"))


class _In(ToolModel):
    model_config = ConfigDict(str_strip_whitespace=True)


class _Out(ToolModel):
    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        # Optional parts that did not happen (no injection, no hint) are left out, not sent as null.
        data = super().model_dump(**kwargs)
        return {k: v for k, v in data.items() if v is not None or k not in OMIT_WHEN_NONE}


class StartSessionIn(_In):
    client_type: str = Field("", max_length=CLIENT_TYPE_MAX, description="the calling client, e.g. claude_code")
    prompt: str = Field("", max_length=PROMPT_MAX, description="the task; when given, relevant knowledge is injected")
    framework: str = Field("", max_length=STACK_NAME_MAX)
    language: str = Field("", max_length=STACK_NAME_MAX)
    project_id: str | None = Field(None, max_length=ID_MAX)
    project_name: str | None = Field(None, min_length=1, max_length=PROJECT_NAME_MAX, description="found or created")
    client_request_id: str | None = _client_request_id()


class InjectionOut(_Out):
    knowledge_ids: list[str]
    injection: str

    @classmethod
    def from_result(cls, injection: Injection | None) -> InjectionOut | None:
        return None if injection is None else cls(knowledge_ids=list(injection.ids), injection=injection.text)


class StartSessionOut(_Out):
    session_id: str
    started_at: datetime
    project_id: str
    project_source: str
    relevant_knowledge: InjectionOut | None = None
    open_action_items: InjectionOut | None = None
    injection_notice: str | None = Field(None, description="why nothing (or less) was injected")

    @classmethod
    def from_result(cls, opened: SessionOpened) -> StartSessionOut:
        return cls(session_id=str(opened.session.id), started_at=opened.session.started_at,
                   project_id=str(opened.session.project_id), project_source=opened.project_source,
                   relevant_knowledge=InjectionOut.from_result(opened.relevant_knowledge),
                   open_action_items=InjectionOut.from_result(opened.open_action_items),
                   injection_notice=opened.injection_notice or None)


class RetrieveContext(_In):
    session_id: str | None = Field(None, max_length=ID_MAX)
    project_id: str | None = Field(None, max_length=ID_MAX)
    framework: str = Field("", max_length=STACK_NAME_MAX)
    language: str = Field("", max_length=STACK_NAME_MAX)


class RetrieveIn(_In):
    prompt: str = Field(min_length=1, max_length=PROMPT_MAX)
    context: RetrieveContext | None = None
    limit: int = Field(5, ge=1, le=20)
    budget_tokens: int | None = Field(None, ge=50, le=8000)


class KnowledgeOut(_Out):
    id: str
    type: str
    trigger: str
    rule: str
    rationale: str
    confidence: float
    tags: list[str] = []
    project_id: str | None = None
    score: float | None = None
    why: dict[str, float] = {}
    stage: str | None = None

    @classmethod
    def of_hit(cls, hit: KnowledgeHit) -> KnowledgeOut:
        return cls(id=str(hit.id), type=hit.type, trigger=hit.trigger, rule=hit.content, rationale=hit.rationale,
                   confidence=hit.confidence, tags=hit.tags, project_id=_str_or_none(hit.project_id),
                   score=hit.score, why=hit.explain)

    @classmethod
    def of_row(cls, row: KnowledgeItem) -> KnowledgeOut:
        """A stored row as the style tool lists it: no tags, score or why."""
        return cls(id=str(row.id), type=row.type, trigger=row.trigger, rule=row.content, rationale=row.rationale,
                   confidence=row.confidence, stage=row.stage or None, project_id=_str_or_none(row.project_id))


class BundleOut(_Out):
    items: list[KnowledgeOut]
    injected_ids: list[str]
    retrieval: str
    notice: str | None = None


class RetrieveOut(_Out):
    bundle: BundleOut
    injection: str

    @classmethod
    def from_result(cls, retrieved: Retrieved) -> RetrieveOut:
        found, injection = retrieved.found, retrieved.injection
        bundle = BundleOut(items=[KnowledgeOut.of_hit(h) for h in found.hits], injected_ids=list(injection.ids),
                           retrieval=found.retrieval,
                           notice=" ".join(n for n in (found.notice, injection.notice) if n) or None)
        return cls(bundle=bundle, injection=injection.text)


# The shape of one close-capture learning, for the published schema only: items are judged one by one at close
# (sessions.outcome_rules), so a bad item is dropped with a reason instead of failing the call.
class LearningIn(BaseModel):
    """One durable rule distilled from the session."""

    model_config = ConfigDict(title="Learning")
    trigger: str = Field(min_length=3, max_length=LEARNING_LIMITS["trigger"], description="when the rule applies")
    rule: str = Field(min_length=3, max_length=LEARNING_LIMITS["rule"], description="what to do")
    rationale: str = Field("", max_length=LEARNING_LIMITS["rationale"], description="why")
    type: Literal[LEARNING_TYPES] = "heuristic"  # type: ignore[valid-type]
    source: Literal[LEARNING_SOURCES] = "discovery"  # type: ignore[valid-type]
    confidence: float = Field(0.8, ge=0.0, le=1.0)


# Lenient at runtime (list[Any]), described in full on the wire: clients see what a learning looks like.
Learnings = Annotated[list[Any], WithJsonSchema({"type": "array", "items": LearningIn.model_json_schema()})]


class ReportIn(_In):
    session_id: str = Field(min_length=1, max_length=ID_MAX)
    success: bool
    user_feedback: Literal["up", "down"] | None = None
    build_attempts: int = Field(1, ge=1, le=1000)
    errors: list[Annotated[str, Field(max_length=ERROR_MAX)]] = Field(default_factory=list, max_length=50)
    files_created: int = Field(0, ge=0)
    files_modified: int = Field(0, ge=0)
    files_rejected: int = Field(0, ge=0)
    knowledge_used: list[IdItem] = Field(default_factory=list, max_length=100)
    learnings: Learnings = Field(default_factory=list, description="0-5 learnings; an invalid item is dropped "
                                 "with a reason (see learnings.dropped), never failing the close")
    resolved_action_item_ids: list[IdItem] = Field(default_factory=list, max_length=50)
    summary: str = Field("", max_length=SUMMARY_MAX)


class LearningAccepted(_Out):
    index: int
    trigger: str
    rule: str


class LearningDropped(_Out):
    index: int
    reason: str


class LearningsOut(_Out):
    accepted: list[LearningAccepted]
    dropped: list[LearningDropped]


class ReportOut(_Out):
    session_id: str
    sqs: int = Field(ge=0, le=100)
    queued: bool
    already_closed: bool
    knowledge_updated: int
    resolved_action_items: int
    scores: dict[str, float]
    learnings: LearningsOut
    hint: str | None = None

    @classmethod
    def from_result(cls, closed: SessionClosed) -> ReportOut:
        scores = closed.scores
        learnings = LearningsOut(
            accepted=[LearningAccepted.model_validate(a, from_attributes=True) for a in closed.learnings_accepted],
            dropped=[LearningDropped.model_validate(d, from_attributes=True) for d in closed.learnings_dropped],
        )
        return cls(session_id=str(closed.session_id), sqs=scores.sqs, queued=closed.jobs_queued,
                   already_closed=closed.already_closed, knowledge_updated=closed.knowledge_updated,
                   resolved_action_items=closed.action_items_resolved, learnings=learnings, hint=closed.hint,
                   scores={"build": scores.build, "feedback": scores.feedback,
                           "diffAcceptance": scores.diff_acceptance, "penalty": scores.penalty})


class TeachIn(_In):
    rule: str = Field(min_length=RULE_MIN, max_length=RULE_MAX)
    trigger: str = Field("", max_length=TRIGGER_MAX)
    rationale: str = Field("", max_length=RATIONALE_MAX)
    type: Literal["reflex", "recipe", "heuristic", "principle", "anti_principle", "action_item"] = "heuristic"
    tags: list[Annotated[str, Field(max_length=TAG_MAX)]] = Field(default_factory=list, max_length=TAGS_MAX)
    project_id: str | None = Field(None, max_length=ID_MAX)
    framework: str = Field("", max_length=STACK_NAME_MAX)
    language: str = Field("", max_length=STACK_NAME_MAX)
    supersedes_knowledge_id: str | None = Field(None, max_length=ID_MAX)
    client_request_id: str | None = _client_request_id()
    scope: Literal["project", "user"] = Field(
        "project", description="project (default): the rule lives in the project; user: every project of yours")


class TeachOut(_Out):
    id: str
    confidence: float
    project_id: str | None
    superseded_id: str | None = None


class PeerCardOut(_Out):
    email: str
    facts: dict[str, str]
    updated_at: str | None = None

    @classmethod
    def from_result(cls, card: PeerCardView) -> PeerCardOut:
        updated = card.updated_at.isoformat() if card.updated_at else None
        return cls(email=card.email, facts=card.facts, updated_at=updated)


class StyleOut(_Out):
    peer_card: PeerCardOut
    reflexes: list[KnowledgeOut]

    @classmethod
    def from_result(cls, style: UserStyle) -> StyleOut:
        return cls(peer_card=PeerCardOut.from_result(style.peer_card),
                   reflexes=[KnowledgeOut.of_row(r) for r in style.reflexes])


class OracleIn(_In):
    question: str = Field(min_length=3, max_length=2000)
    project_id: str | None = Field(None, max_length=ID_MAX)


class CitationOut(_Out):
    n: int
    kind: Literal["knowledge", "session"]
    id: str
    score: float
    text: str
    type: str | None = None
    date: str | None = None


class OracleOut(_Out):
    answer: str
    citations: list[CitationOut]
    groundedness: Literal["high", "medium", "low", "none"]
    mode: Literal["extractive", "model"]

    @classmethod
    def from_result(cls, answer: OracleAnswer) -> OracleOut:
        citations = [
            CitationOut(n=c.n, kind=c.kind, id=str(c.id), score=c.score, text=c.text, type=c.knowledge_type,
                        date=c.started_on.isoformat() if c.started_on else None)
            for c in answer.citations
        ]
        return cls(answer=answer.answer, citations=citations, groundedness=answer.groundedness, mode=answer.mode)


class LogEventIn(_In):
    session_id: str = Field(min_length=1, max_length=ID_MAX)
    event_type: str = Field(min_length=1, max_length=EVENT_TYPE_MAX)
    payload: dict[str, Any] = Field(default_factory=dict)
    client_request_id: str | None = _client_request_id()


class LogEventOut(_Out):
    id: str
    accepted: bool


class FindSkillIn(_In):
    query: str = Field(min_length=1, max_length=QUERY_MAX)
    limit: int = Field(5, ge=1, le=20)


class SkillOut(_Out):
    id: str
    type: str
    stage: str
    trigger: str
    rule: str
    rationale: str
    confidence: float
    score: float


class FindSkillOut(_Out):
    skills: list[SkillOut]
    retrieval: str
    notice: str | None = None

    @classmethod
    def from_result(cls, found: SkillsFound) -> FindSkillOut:
        skills = [SkillOut(id=str(k.id), type=k.type, stage=k.stage, trigger=k.trigger, rule=k.content,
                           rationale=k.rationale, confidence=k.confidence, score=k.score) for k in found.skills]
        return cls(skills=skills, retrieval=found.retrieval, notice=found.notice or None)


class SessionSearchIn(_In):
    query: str = Field(min_length=1, max_length=QUERY_MAX)
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(10, ge=1, le=50)


class SnippetOut(_Out):
    event_type: str
    text: str
    at: str


class SessionFoundOut(_Out):
    session_id: str
    project_id: str
    prompt: str
    started_at: str
    ended_at: str | None
    sqs: int | None
    score: float
    snippets: list[SnippetOut]


class SessionSearchOut(_Out):
    sessions: list[SessionFoundOut]
    retrieval: str
    notice: str | None = None

    @classmethod
    def from_result(cls, found: SessionsFound) -> SessionSearchOut:
        sessions = [
            SessionFoundOut(
                session_id=str(f.session.id), project_id=str(f.session.project_id), prompt=f.session.prompt_preview,
                started_at=f.session.started_at.isoformat(), ended_at=_iso_or_none(f.session.ended_at),
                sqs=f.session.quality_score, score=f.score,
                snippets=[SnippetOut(event_type=e.event_type, text=e.snippet, at=e.occurred_at.isoformat())
                          for e in f.events],
            )
            for f in found.sessions
        ]
        return cls(sessions=sessions, retrieval=found.retrieval, notice=found.notice or None)


def _str_or_none(value: object | None) -> str | None:
    return str(value) if value is not None else None


def _iso_or_none(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
