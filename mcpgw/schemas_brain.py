# ruff: noqa: N815 - field names are the wire contract of the spec (camelCase)
"""Pydantic contracts of the brain tools (the MCP inputSchema/outputSchema are generated from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Id = Field(min_length=1, max_length=64)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartSessionIn(_In):
    clientType: str = Field("", max_length=60, description="the calling client, e.g. claude_code")
    prompt: str = Field("", max_length=8000, description="the task; when given, relevant knowledge is injected")
    framework: str = Field("", max_length=60)
    language: str = Field("", max_length=60)
    projectId: str | None = Field(None, max_length=64)
    projectName: str | None = Field(None, min_length=1, max_length=120, description="found or created")


class InjectionOut(_Out):
    knowledgeIds: list[str]
    injection: str


class StartSessionOut(_Out):
    sessionId: str
    startedAt: datetime
    projectId: str
    projectSource: str
    relevantKnowledge: InjectionOut | None = None
    openActionItems: InjectionOut | None = None


class RetrieveContext(_In):
    sessionId: str | None = Field(None, max_length=64)
    projectId: str | None = Field(None, max_length=64)
    framework: str = Field("", max_length=60)
    language: str = Field("", max_length=60)


class RetrieveIn(_In):
    prompt: str = Field(min_length=1, max_length=8000)
    context: RetrieveContext | None = None
    limit: int = Field(5, ge=1, le=20)
    budgetTokens: int | None = Field(None, ge=50, le=8000)


class KnowledgeOut(_Out):
    id: str
    type: str
    trigger: str
    rule: str
    rationale: str
    confidence: float
    tags: list[str] = []
    projectId: str | None = None
    score: float | None = None
    why: dict[str, float] = {}
    stage: str | None = None


class BundleOut(_Out):
    items: list[KnowledgeOut]
    injectedIds: list[str]
    retrieval: str
    notice: str | None = None


class RetrieveOut(_Out):
    bundle: BundleOut
    injection: str


class ReportIn(_In):
    sessionId: str = Id
    success: bool
    userFeedback: Literal["up", "down"] | None = None
    buildAttempts: int = Field(1, ge=1, le=1000)
    errors: list[str] = Field(default_factory=list, max_length=50)
    filesCreated: int = Field(0, ge=0)
    filesModified: int = Field(0, ge=0)
    filesRejected: int = Field(0, ge=0)
    knowledgeUsed: list[str] = Field(default_factory=list, max_length=100)
    learnings: list[Any] = Field(default_factory=list, description="0-5 {trigger, rule, rationale, type, source, "
                                 "confidence}; invalid items are dropped, never failing the close")
    resolvedActionItemIds: list[str] = Field(default_factory=list, max_length=50)
    summary: str = Field("", max_length=4000)


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
    sessionId: str
    sqs: int = Field(ge=0, le=100)
    queued: bool
    alreadyClosed: bool
    knowledgeUpdated: int
    resolvedActionItems: int
    scores: dict[str, float]
    learnings: LearningsOut
    hint: str | None = None


class TeachIn(_In):
    rule: str = Field(min_length=3, max_length=4000)
    trigger: str = Field("", max_length=1000)
    rationale: str = Field("", max_length=4000)
    type: Literal["reflex", "recipe", "heuristic", "principle", "anti_principle", "action_item"] = "heuristic"
    tags: list[str] = Field(default_factory=list, max_length=20)
    projectId: str | None = Field(None, max_length=64)
    framework: str = Field("", max_length=60)
    language: str = Field("", max_length=60)
    supersedesKnowledgeId: str | None = Field(None, max_length=64)


class TeachOut(_Out):
    id: str
    confidence: float
    projectId: str | None
    supersededId: str | None = None


class EmptyIn(_In):
    pass


class PeerCardOut(_Out):
    email: str
    facts: dict[str, str]
    updatedAt: str | None = None


class StyleOut(_Out):
    peerCard: PeerCardOut
    reflexes: list[KnowledgeOut]


class OracleIn(_In):
    question: str = Field(min_length=3, max_length=2000)
    projectId: str | None = Field(None, max_length=64)


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


class LogEventIn(_In):
    sessionId: str = Id
    eventType: str = Field(min_length=1, max_length=40)
    payload: dict[str, Any] = Field(default_factory=dict)


class LogEventOut(_Out):
    id: str
    accepted: bool


class FindSkillIn(_In):
    query: str = Field(min_length=1, max_length=2000)
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


class SessionSearchIn(_In):
    query: str = Field(min_length=1, max_length=2000)
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(10, ge=1, le=50)


class SnippetOut(_Out):
    eventType: str
    text: str
    at: str


class SessionFoundOut(_Out):
    sessionId: str
    projectId: str
    prompt: str
    startedAt: str
    endedAt: str | None
    sqs: int | None
    score: float
    snippets: list[SnippetOut]


class SessionSearchOut(_Out):
    sessions: list[SessionFoundOut]
    retrieval: str
    notice: str | None = None
