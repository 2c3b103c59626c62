"""/api/v1/export: everything the caller owns as one JSON document, streamed row by row.

Rows are read in chunks with server-side iteration, so memory stays flat however large the account is.
The document's shape is `ExportOut` (in the OpenAPI schema); it is written by hand here only so that it
never has to exist in memory at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator

from django.db.models import Prefetch, Q
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Router, Schema

from brain.errors import ForbiddenProject
from brain.logs import log_op
from knowledge.api_schemas import PeerCardOut
from knowledge.models import KnowledgeItem
from knowledge.selectors_style import peer_card_of
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.schemas import ProjectOut, TokenOut
from projects.scope import Principal
from projects.selectors import projects_visible, tokens_of
from sessions.api_schemas import ExportKnowledgeOut, ExportOut, ExportUser, SessionDetailOut
from sessions.models import SessionEvent
from sessions.selectors_owned import sessions_owned

logger = logging.getLogger(__name__)
router = Router(tags=["export"])
FORMAT = "external-brain-export/1"
CHUNK = 200
_HEAVY = ("embedding", "search_vector")  # vectors and tsvectors are derived data, not the user's


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


def _sessions(principal: Principal) -> Iterator[SessionDetailOut]:
    events = SessionEvent.objects.defer(*_HEAVY).order_by("occurred_at", "created_at", "id")
    rows = (sessions_owned(principal=principal).select_related("project")
            .prefetch_related(Prefetch("events", queryset=events)).order_by("started_at", "id"))
    for session in rows.iterator(chunk_size=CHUNK):
        yield SessionDetailOut.with_events(session, list(session.events.all()))


def export_document(principal: Principal) -> Iterator[str]:
    """The export as JSON text chunks, in ExportOut's field order."""
    user = principal.user
    yield json.dumps({"format": FORMAT, "exportedAt": timezone.now().isoformat()})[:-1]
    yield ',"user":' + ExportUser(id=user.pk, email=user.email).model_dump_json()
    yield ',"peerCard":' + PeerCardOut.model_validate(peer_card_of(principal=principal)).model_dump_json()
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
    if principal.is_project_scoped:
        raise ForbiddenProject("a project-scoped token cannot export the whole account; use a user-scoped token")
    log_op(logger, "api.export", user=str(principal.user.pk)[:8])
    response = StreamingHttpResponse(export_document(principal), content_type="application/json")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="brain-export-{stamp}.json"'
    return response
