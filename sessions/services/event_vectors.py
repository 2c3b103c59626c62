"""Session events get their vectors off the request path (knowledge.services.vector_batcher): the event row
and its full-text commit at once, the vector follows within a fraction of a second.

BRAIN_EVENT_VECTORS=inline embeds before the insert instead, as every write did before (the test suite uses
it so that its assertions on vectors need no waiting; the batched path has its own tests).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db.models import Q

from brain.logs import log_op
from knowledge.embeddings import current_model_name
from knowledge.services.backfill import Target, embeddings_backfill
from knowledge.services.vector_batcher import VectorBatcher
from sessions.models import SessionEvent

logger = logging.getLogger("sessions")
EVENTS = Target("session events", SessionEvent, lambda row: row.content, ("content",), ~Q(content=""))
EVENT_BATCHER = VectorBatcher(EVENTS)


def event_vectors_deferred() -> bool:
    return getattr(settings, "BRAIN_EVENT_VECTORS", "batched") != "inline"


def event_vectors_backfill() -> int:
    """Vectors for events that have none (their process died before its batcher ran, or its queue was full)."""
    model = current_model_name()
    if model is None:
        return 0  # embeddings off or broken: nothing to do until they work again
    done = embeddings_backfill(target=EVENTS, model_name=model)
    if done:
        log_op(logger, "vectors.backfill", table=EVENTS.label, rows=done)
    return done
