"""Events an agent logs during its session: validated types, capped payloads, the caller's open session only."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from brain.errors import ValidationFailed
from projects.scope import Principal
from sessions.models import SessionEvent
from sessions.selectors_owned import session_owned
from sessions.services import session_event_log

EVENT_TYPES = (
    "user_correction", "file_rejected", "file_accepted", "knowledge_rejected", "knowledge_applied", "build",
    "test", "error", "tool_use", "decision", "note",
)
MAX_PAYLOAD_BYTES = 16_384
_TEXT_KEYS = ("message", "text", "content", "correction", "summary", "error", "reason", "note", "command", "file",
              "path", "tool")


def _searchable(event_type: str, payload: dict[str, Any]) -> str:
    """The text session search matches: the payload's human-readable string fields, in a stable order."""
    parts = [str(payload[k]) for k in _TEXT_KEYS if isinstance(payload.get(k), str | int | float)]
    parts += [str(v) for k, v in payload.items() if k not in _TEXT_KEYS and isinstance(v, str) and len(v) < 500]
    # Plain text, no type prefix: extraction mines corrections from this text as written.
    return " ".join(parts)


def session_event_record(
    *, principal: Principal, session_id: str, event_type: str, payload: dict[str, Any] | None = None,
) -> SessionEvent:
    """Appends one validated event to the caller's open session (closed or foreign sessions are refused)."""
    if event_type not in EVENT_TYPES:
        raise ValidationFailed(f"eventType must be one of {', '.join(EVENT_TYPES)}; got {event_type[:40]!r}")
    payload = payload or {}
    size = len(json.dumps(payload, default=str).encode())
    if size > MAX_PAYLOAD_BYTES:
        raise ValidationFailed(f"payload is {size} bytes; the limit is {MAX_PAYLOAD_BYTES} (send a summary)")
    with transaction.atomic():
        session = session_owned(principal=principal, session_id=session_id, for_update=True)
        if session.ended_at is not None:
            raise ValidationFailed("this session is already closed; start a new one with brain_start_session")
        return session_event_log(session=session, event_type=event_type, content=_searchable(event_type, payload),
                                 payload=payload)
