"""Writes of agent sessions and their events. Event text is embedded before the transaction, batched after the
commit, or, in a bulk ingest, a chunk ahead of the inserts; events an agent logs itself are validated (types,
payload size) and only land in the caller's open session (in one statement when vectors are batched:
sessions/services/event_fast.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max, Model
from django.utils import timezone

from brain.errors import ValidationFailed
from brain.sql_rows import insert_together
from brain.text import text_storable
from knowledge.services.create import embed_or_none
from projects.models import Project, User
from projects.scope import Principal
from sessions.models import EVENT_TYPE_MAX, Session, SessionEvent
from sessions.selectors.owned import session_owned
from sessions.services.event_fast import event_insert_owned
from sessions.services.event_vectors import EVENT_BATCHER, event_vectors_deferred

PROMPT_EVENT = "prompt"


@dataclass(frozen=True)
class EventDraft:
    event_type: str
    content: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None


def _validate(draft: EventDraft) -> None:
    # The payload first: an event's content is derived from it, and the caller should hear which field it sent.
    text_storable(eventType=draft.event_type, payload=draft.payload, content=draft.content)
    if not draft.event_type or len(draft.event_type) > EVENT_TYPE_MAX:
        raise ValidationFailed(f"event_type must be 1-{EVENT_TYPE_MAX} characters; got {draft.event_type!r}")


@dataclass(frozen=True)
class SessionDraft:
    """A session not yet stored and its prompt event (embedded, unless its vector is to come from the batcher)."""

    session: Session
    events: list[SessionEvent]
    defer_vectors: bool


def session_draft(
    *, user: User, project: Project, client_type: str = "", prompt: str = "", framework: str = "",
    started_at: datetime | None = None, binding: str = "", defer_vectors: bool = False,
) -> SessionDraft:
    """A session in `project` (resolved and authorised by the caller), validated, not stored; the prompt
    becomes a searchable `prompt` event so session search finds the task by what was asked."""
    text_storable(clientType=client_type, prompt=prompt, framework=framework)
    session = Session(user=user, project=project, client_type=client_type, prompt=prompt, framework=framework,
                      started_at=started_at or timezone.now(), binding=binding)
    drafts = [EventDraft(PROMPT_EVENT, prompt, {}, session.started_at)] if prompt.strip() else []
    return SessionDraft(session, _rows([(session, d) for d in drafts], embed=not defer_vectors), defer_vectors)


def session_insert(draft: SessionDraft, *, with_rows: Sequence[Model] = ()) -> Session:
    """Stores the session, its prompt event and `with_rows` (rows that reference it) in one statement; a
    deferred vector is queued once that commits."""
    insert_together([draft.session, *draft.events, *with_rows])
    if draft.defer_vectors:
        EVENT_BATCHER.submit_after_commit([row.pk for row in draft.events if row.content.strip()])
    return draft.session


def session_start(
    *, user: User, project: Project, client_type: str = "", prompt: str = "", framework: str = "",
    started_at: datetime | None = None, binding: str = "", defer_vectors: bool = False,
) -> Session:
    """Opens a session in `project` with its prompt event, in one statement (`session_draft`)."""
    return session_insert(session_draft(user=user, project=project, client_type=client_type, prompt=prompt,
                                        framework=framework, started_at=started_at, binding=binding,
                                        defer_vectors=defer_vectors))


def _rows(pairs: Sequence[tuple[Session, EventDraft]], *, embed: bool,
          following: dict[Any, int] | None = None) -> list[SessionEvent]:
    """Validated, unsaved rows, numbered from each session's next position (`following`, else read); with
    `embed`, their texts embedded in one call."""
    for _, draft in pairs:
        _validate(draft)
    now = timezone.now()
    if following is None:
        following = _next_positions({session.pk for session, _ in pairs if not session._state.adding})
    rows = []
    for session, d in pairs:
        position = following.get(session.pk, 0)
        following[session.pk] = position + 1
        rows.append(SessionEvent(
            session=session, user_id=session.user_id, project_id=session.project_id, event_type=d.event_type,
            payload=d.payload, content=d.content, occurred_at=d.occurred_at or now, position=position,
            embedding=None, embedding_model="",
        ))
    return _with_vectors(rows, _vectors_for(rows)) if embed else rows


def _next_positions(session_ids: set[Any]) -> dict[Any, int]:
    """The position each session's next event takes (sessions without events are absent: they start at 0). A
    session not stored yet (its prompt event goes in with it) has none: no query."""
    if not session_ids:
        return {}
    last = (SessionEvent.objects.filter(session_id__in=session_ids, position__isnull=False)
            .values("session_id").annotate(last=Max("position")).values_list("session_id", "last"))
    return {session_id: position + 1 for session_id, position in last}


def session_events_log_many(
    *, session: Session, drafts: Sequence[EventDraft], defer_vectors: bool = False, position: int | None = None,
) -> list[SessionEvent]:
    """Appends events in order (all validated first, all or nothing), embedding their text in one batch,
    or, with defer_vectors, after the commit in the batcher's thread (the caller does not wait). `position`: the
    session's next one when the caller has just read its events (else it is read)."""
    following = None if position is None else {session.pk: position}
    created = _insert(_rows([(session, d) for d in drafts], embed=not defer_vectors, following=following))
    if defer_vectors:
        EVENT_BATCHER.submit_after_commit([row.pk for row in created if row.content.strip()])
    return created


# Rows a bulk ingest embeds at a time: the model works on the next chunk while the previous one is inserted, so
# PostgreSQL's index work (~3 ms a row in the HNSW graph at 80,000 rows) overlaps the model instead of following it.
INGEST_CHUNK = 128


def session_events_ingest(*, batches: Sequence[tuple[Session, Sequence[EventDraft]]]) -> list[list[SessionEvent]]:
    """Bulk ingest: the events of many sessions, validated first and inserted all or nothing; returns each
    session's events in order. Texts are embedded a chunk ahead of the inserts, on a helper thread (the model
    releases the GIL), so the database and the model work at once."""
    rows = _rows([(s, d) for s, drafts in batches for d in drafts], embed=False)
    chunks = [rows[start:start + INGEST_CHUNK] for start in range(0, len(rows), INGEST_CHUNK)]
    created: list[SessionEvent] = []
    with transaction.atomic(), ThreadPoolExecutor(1, thread_name_prefix="ingest-embed") as ahead:
        vectors = [ahead.submit(_vectors_for, chunks[0])] if chunks else []
        for index, chunk in enumerate(chunks):
            if index + 1 < len(chunks):  # queued behind this chunk's own: the helper runs one chunk ahead
                vectors.append(ahead.submit(_vectors_for, chunks[index + 1]))
            created += SessionEvent.objects.bulk_create(_with_vectors(chunk, vectors[index].result()))
    out, start = [], 0
    for _, drafts in batches:
        out.append(created[start:start + len(drafts)])
        start += len(drafts)
    return out


def _vectors_for(rows: Sequence[SessionEvent]) -> tuple[dict[int, list[float]], str]:
    """The vectors of the rows that have text, by position, and the model's name ({} when the embedder is off)."""
    indexed = [i for i, row in enumerate(rows) if row.content.strip()]
    if not indexed:
        return {}, ""
    vectors, model = embed_or_none([rows[i].content for i in indexed], op="session.embed_failed")
    return (dict(zip(indexed, vectors, strict=True)) if vectors else {}), model


def _with_vectors(rows: list[SessionEvent], found: tuple[dict[int, list[float]], str]) -> list[SessionEvent]:
    by_index, model = found
    for index, vector in by_index.items():
        rows[index].embedding, rows[index].embedding_model = vector, model
    return rows


def _insert(rows: list[SessionEvent]) -> list[SessionEvent]:
    """One INSERT. bulk_create is all or nothing by itself (and inside a caller's transaction adds nothing); a
    lone row outside one is saved plainly, which spares the BEGIN and COMMIT bulk_create would wrap it in."""
    if len(rows) == 1 and not transaction.get_connection().in_atomic_block:
        rows[0].save(force_insert=True)
        return rows
    return SessionEvent.objects.bulk_create(rows)


def session_event_log(
    *, session: Session, event_type: str, content: str = "", payload: dict[str, Any] | None = None,
    occurred_at: datetime | None = None, defer_vectors: bool = False,
) -> SessionEvent:
    """Appends one event to the session."""
    draft = EventDraft(event_type=event_type, content=content, payload=payload or {}, occurred_at=occurred_at)
    return session_events_log_many(session=session, drafts=[draft], defer_vectors=defer_vectors)[0]


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
    text_storable(sessionId=session_id, eventType=event_type)  # the payload is checked with the event it becomes
    if event_type not in EVENT_TYPES:
        raise ValidationFailed(f"eventType must be one of {', '.join(EVENT_TYPES)}; got {event_type[:40]!r}")
    payload = payload or {}
    size = len(json.dumps(payload, default=str).encode())
    if size > MAX_PAYLOAD_BYTES:
        raise ValidationFailed(f"payload is {size} bytes; the limit is {MAX_PAYLOAD_BYTES} (send a summary)")
    content = _searchable(event_type, payload)
    _validate(EventDraft(event_type=event_type, content=content, payload=payload))  # what the insert would check
    if event_vectors_deferred():  # one statement; its vector follows from the batcher
        fast = event_insert_owned(principal=principal, session_id=session_id, event_type=event_type,
                                  payload=payload, content=content)
        if fast is not None:
            if content.strip():
                EVENT_BATCHER.submit_after_commit([fast.pk])
            return fast
    with transaction.atomic():  # the step-by-step path: inline vectors, or the precise error of a refusal
        session = session_owned(principal=principal, session_id=session_id, for_update=True)
        if session.ended_at is not None:
            raise ValidationFailed("this session is already closed; start a new one with brain_start_session")
        return session_event_log(session=session, event_type=event_type, content=content,
                                 payload=payload, defer_vectors=event_vectors_deferred())
