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

from django.db.models import Q
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Router, Schema

from brain.logs import log_op
from knowledge.api.schemas import PeerCardOut
from knowledge.models import KnowledgeItem
from knowledge.selectors.live import peer_card_of
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.schemas import ProjectOut, TokenOut
from projects.scope import Principal
from projects.selectors.accounts import projects_visible, tokens_of
from projects.selectors.addressed import account_user
from sessions.api.schemas import EventOut, ExportKnowledgeOut, ExportOut, ExportUser, SessionDetailOut, SessionOut
from sessions.models import Session, SessionEvent
from sessions.selectors.owned import sessions_owned

logger = logging.getLogger(__name__)
router = Router(tags=["export"])
FORMAT = "external-brain-export/1"
CHUNK = 200
_HEAVY = ("embedding", "search_vector")  # vectors and tsvectors are derived data, not the user's
_EVENT_FIELDS = ("id", "session_id", "event_type", "content", "payload", "occurred_at")


def _array(name: str, rows: Iterable[Schema]) -> Iterator[str]:
    yield f',"{name}":['
    for i, row in enumerate(rows):
        yield ("," if i else "") + row.model_dump_json()
    yield "]"


def _knowledge(principal: Principal) -> Iterator[ExportKnowledgeOut]:
    visible = projects_visible(principal=principal).values("id")
    rows = KnowledgeItem.objects.filter(Q(project__in=visible) | Q(project__isnull=True), owner=principal.user)
    for row in rows.defer(*_HEAVY).order_by("created_at", "id").iterator(chunk_size=CHUNK):
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


def _sessions(principal: Principal) -> Iterator[SessionDetailOut]:
    rows = sessions_owned(principal=principal).select_related("project").order_by("started_at", "id")
    batch: list[Session] = []
    for session in rows.iterator(chunk_size=CHUNK):
        batch.append(session)
        if len(batch) == CHUNK:
            yield from _with_events(principal, batch)
            batch = []
    yield from _with_events(principal, batch)


def export_document(principal: Principal) -> Iterator[str]:
    """The export as JSON text chunks, in ExportOut's field order."""
    user = principal.user
    yield json.dumps({"format": FORMAT, "exportedAt": timezone.now().isoformat()})[:-1]
    yield ',"user":' + ExportUser(id=user.pk, email=user.email).model_dump_json()
    yield ',"peerCard":' + PeerCardOut.of(peer_card_of(principal=principal)).model_dump_json()
    yield from _array("projects", (ProjectOut.of(p, principal) for p in
                                   projects_visible(principal=principal).iterator(chunk_size=CHUNK)))
    yield from _array("tokens", (TokenOut.of(t) for t in
                                 tokens_of(user=user).order_by("created_at", "id").iterator(chunk_size=CHUNK)))
    yield from _array("knowledge", _knowledge(principal))
    yield from _array("sessions", _sessions(principal))
    yield "}"


@router.get("", response={200: ExportOut, 401: ErrorEnvelope, 403: ErrorEnvelope},
            summary="Export everything you own (JSON, streamed)")
def export(request: HttpRequest) -> StreamingHttpResponse:
    """Projects you can see, your tokens (metadata, never secrets), peer card, knowledge (deleted and superseded
    rows too) and sessions with their events. Needs a user-scoped token or the browser session."""
    principal = principal_of(request)
    account_user(principal=principal, action="export the whole account")
    log_op(logger, "api.export", user=str(principal.user.pk)[:8])
    response = StreamingHttpResponse(export_document(principal), content_type="application/json")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="brain-export-{stamp}.json"'
    return response
