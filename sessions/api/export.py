"""/api/v1/export: everything the caller owns as one JSON document, streamed row by row.

Rows are read in chunks with server-side iteration (events as plain values, one query per batch of
sessions), so memory stays flat however large the account is. The document's shape is `ExportOut` (in
the OpenAPI schema); it is written by hand here only so that it never has to exist in memory at once.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator
from enum import StrEnum

from django.http import FileResponse, HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.utils import timezone
from ninja import Router, Schema

from brain.logs import log_op
from knowledge.api.schemas import PeerCardOut
from knowledge.exporting import MARKDOWN_FILES, cursor_rules_zip
from knowledge.selectors.export import cursor_rules_export, export_project, knowledge_exported, markdown_export
from knowledge.selectors.live import peer_card_of
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.schemas import ProjectOut, TokenOut
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import projects_visible, tokens_of
from projects.selectors.addressed import account_user
from sessions.api.schemas import EventOut, ExportKnowledgeOut, ExportOut, ExportUser, SessionDetailOut, SessionOut
from sessions.models import Session, SessionEvent
from sessions.selectors.owned import sessions_owned

logger = logging.getLogger(__name__)
router = Router(tags=["export"])
FORMAT = "external-brain-export/2"
CHUNK = 200
_EVENT_FIELDS = ("id", "session_id", "event_type", "content", "payload", "occurred_at")


def _array(name: str, rows: Iterable[Schema]) -> Iterator[str]:
    yield f',"{name}":['
    for i, row in enumerate(rows):
        yield ("," if i else "") + row.model_dump_json()
    yield "]"


def _knowledge(principal: Principal, project: Project | None) -> Iterator[ExportKnowledgeOut]:
    for row in knowledge_exported(principal=principal, project=project).iterator(chunk_size=CHUNK):
        yield ExportKnowledgeOut.of_row(row)


def _with_events(principal: Principal, batch: list[Session]) -> Iterator[SessionDetailOut]:
    """The batch's sessions with their events, read as plain values in one query (no model instances)."""
    events: dict[uuid.UUID, list[EventOut]] = defaultdict(list)
    rows = (SessionEvent.objects.filter(user=principal.user, session__in=[s.id for s in batch])
            .order_by("occurred_at", "created_at", "id").values_list(*_EVENT_FIELDS))
    for pk, session_id, kind, content, payload, at in rows.iterator(chunk_size=CHUNK * 10):
        events[session_id].append(EventOut.model_construct(id=pk, eventType=kind, content=content, payload=payload,
                                                           occurredAt=at))
    for session in batch:
        yield SessionDetailOut.model_construct(**SessionOut.fields_of(session), outcome=session.outcome,
                                               events=events[session.id])


def _sessions(principal: Principal, project: Project | None) -> Iterator[SessionDetailOut]:
    rows = sessions_owned(principal=principal).select_related("project").order_by("started_at", "id")
    if project is not None:
        rows = rows.filter(project=project)
    batch: list[Session] = []
    for session in rows.iterator(chunk_size=CHUNK):
        batch.append(session)
        if len(batch) == CHUNK:
            yield from _with_events(principal, batch)
            batch = []
    yield from _with_events(principal, batch)


def export_document(principal: Principal, *, project: Project | None = None, sessions: bool = True) -> Iterator[str]:
    """The export as JSON text chunks, in ExportOut's field order: everything visible, or only `project`'s
    rows; sessions with their events unless `sessions` is false."""
    user = principal.user
    yield json.dumps({"format": FORMAT, "exportedAt": timezone.now().isoformat()})[:-1]
    yield ',"user":' + ExportUser(id=user.pk, email=user.email).model_dump_json()
    yield ',"peerCard":' + PeerCardOut.of(peer_card_of(principal=principal)).model_dump_json()
    projects = projects_visible(principal=principal).select_related("org")
    if project is not None:
        projects = projects.filter(id=project.id)
    yield from _array("projects", (ProjectOut.of(p, principal) for p in projects.iterator(chunk_size=CHUNK)))
    yield from _array("tokens", (TokenOut.of(t) for t in
                                 tokens_of(user=user).order_by("created_at", "id").iterator(chunk_size=CHUNK)))
    yield from _array("knowledge", _knowledge(principal, project))
    yield from _array("sessions", _sessions(principal, project) if sessions else iter(()))
    yield "}"


class ExportFormat(StrEnum):
    JSON = "json"
    AGENTS_MD = "agents-md"
    CLAUDE_MD = "claude-md"
    CURSOR_RULES = "cursor-rules"


def _attachment(response: HttpResponseBase, name: str) -> HttpResponseBase:
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def export_response(principal: Principal, fmt: str, project: Project | None, sessions: bool) -> HttpResponseBase:
    """The streamed download of one format (cursor-rules: a zip of .mdc files, built in a spooled temp file)."""
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    if fmt in MARKDOWN_FILES:
        name = MARKDOWN_FILES[fmt]
        body = markdown_export(principal=principal, project=project, file_name=name)
        return _attachment(StreamingHttpResponse(body, content_type="text/markdown; charset=utf-8"), name)
    if fmt == ExportFormat.CURSOR_RULES:
        spool = cursor_rules_zip(cursor_rules_export(principal=principal, project=project))
        return _attachment(FileResponse(spool, content_type="application/zip"), f"brain-cursor-rules-{stamp}.zip")
    body = export_document(principal, project=project, sessions=sessions)
    return _attachment(StreamingHttpResponse(body, content_type="application/json"), f"brain-export-{stamp}.json")


@router.get("", response={200: ExportOut, 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope,
                          404: ErrorEnvelope},
            summary="Export everything you own (JSON, streamed), or your rules as AGENTS.md / CLAUDE.md / Cursor rules")
def export(request: HttpRequest, format: ExportFormat = ExportFormat.JSON, project: str | None = None,
           sessions: bool = True) -> HttpResponseBase:
    """Projects you can see, your tokens (metadata, never secrets), peer card, knowledge (deleted and superseded
    rows too) and sessions with their events (`sessions=false` leaves them out); `project` (a name) narrows it to
    one project. `format=agents-md|claude-md` gives one Markdown file of your live rules, `cursor-rules` a zip of
    `.mdc` files, one per group. Needs a user-scoped token or the browser session."""
    principal = principal_of(request)
    user = account_user(principal=principal, action="export the whole account")
    target = export_project(user=user, name=project) if project else None
    log_op(logger, "api.export", user=str(principal.user.pk)[:8], format=format.value, project=bool(target))
    return export_response(principal, format.value, target, sessions)
