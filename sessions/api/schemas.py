"""Wire shapes of the sessions and export API (camelCase, like the MCP tools)."""
# ruff: noqa: N815

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from ninja import Field, Schema

from knowledge.api.schemas import KnowledgeOut, PeerCardOut
from knowledge.models import KnowledgeItem
from projects.api.schemas import ProjectOut, TokenOut
from sessions.models import Session, SessionEvent


class SessionOut(Schema):
    id: uuid.UUID
    projectId: uuid.UUID
    projectName: str
    clientType: str
    prompt: str
    framework: str
    startedAt: datetime
    endedAt: datetime | None
    success: bool | None
    userFeedback: str | None
    sqs: int | None = Field(description="session quality score 0-100, once closed")

    @staticmethod
    def fields_of(s: Session) -> dict[str, Any]:
        return {
            "id": s.id, "projectId": s.project_id, "projectName": s.project.name, "clientType": s.client_type,
            "prompt": s.prompt, "framework": s.framework, "startedAt": s.started_at, "endedAt": s.ended_at,
            "success": s.success, "userFeedback": s.user_feedback or None, "sqs": s.quality_score,
        }

    @staticmethod
    def of(s: Session) -> SessionOut:
        return SessionOut(**SessionOut.fields_of(s))


class SessionPage(Schema):
    items: list[SessionOut]
    nextCursor: str | None


class EventOut(Schema):
    id: uuid.UUID
    eventType: str
    content: str
    payload: Any
    occurredAt: datetime

    @staticmethod
    def of(e: SessionEvent) -> EventOut:
        return EventOut(id=e.id, eventType=e.event_type, content=e.content, payload=e.payload, occurredAt=e.occurred_at)


class SessionDetailOut(SessionOut):
    outcome: dict[str, Any] | None = Field(description="the outcome report as received")
    events: list[EventOut]

    @staticmethod
    def with_events(s: Session, events: list[SessionEvent]) -> SessionDetailOut:
        return SessionDetailOut(**SessionOut.fields_of(s), outcome=s.outcome,
                                events=[EventOut.of(e) for e in events])


class ExportKnowledgeOut(KnowledgeOut):
    deletedAt: datetime | None
    supersededById: uuid.UUID | None
    decayScore: float = 1.0
    fileGlobs: list[str] = Field(default_factory=list)
    alwaysApply: bool = False
    pinned: bool = False

    @staticmethod
    def of_row(row: KnowledgeItem) -> ExportKnowledgeOut:
        # Built without validation: an export serialises thousands of our own rows, and ninja's validating
        # constructor dominated its time. The schemathesis run checks the streamed body against ExportOut.
        return ExportKnowledgeOut.model_construct(**KnowledgeOut.fields_of(row, row.owner_id),
                                                  deletedAt=row.deleted_at, supersededById=row.superseded_by_id,
                                                  decayScore=row.decay_score, fileGlobs=list(row.file_globs),
                                                  alwaysApply=row.always_apply, pinned=row.pinned)


class ExportUser(Schema):
    id: uuid.UUID
    email: str


class ExportOut(Schema):
    """The document GET /export streams (documented here; the body is written row by row)."""

    format: str = Field(description="external-brain-export/2 (/1 lacked decayScore, fileGlobs, alwaysApply, pinned)")
    exportedAt: datetime
    user: ExportUser
    peerCard: PeerCardOut
    projects: list[ProjectOut]
    tokens: list[TokenOut] = Field(description="metadata only: the secrets are never stored")
    knowledge: list[ExportKnowledgeOut] = Field(description="your rows, deleted and superseded ones included")
    sessions: list[SessionDetailOut] = Field(default_factory=list, description="empty unless sessions were asked for")
