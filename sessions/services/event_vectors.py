"""Session events get their vectors off the request path (knowledge.services.vector_batcher): the event row
and its full-text commit at once, the vector follows within a fraction of a second.

BRAIN_EVENT_VECTORS=inline embeds before the insert instead, as every write did before (the test suite uses
it so that its assertions on vectors need no waiting; the batched path has its own tests).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q

from brain.durations import human_duration
from brain.logs import log_op
from knowledge.embeddings import current_model_name
from knowledge.services.backfill import Target, Waiting, embeddings_backfill, vectors_waiting
from knowledge.services.knowledge_vectors import KNOWLEDGE
from knowledge.services.vector_batcher import VectorBatcher
from sessions.models import SessionEvent

logger = logging.getLogger("sessions")
# Events with no words (an empty or blank text) are never embedded: the write path skips them, and so does the backfill.
EVENTS = Target("session events", SessionEvent, lambda row: row.content, ("content",), ~Q(content__regex=r"^\s*$"))
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


# A row still without its vector after this long was missed by its batcher (a process that died, a full queue) and
# by ten runs of the beat task that embeds such rows: the worker is not running, or the embedder fails.
VECTORS_OVERDUE_S = 600.0


def vectors_health() -> tuple[bool, str]:
    """For `brain doctor`: the rows of both tables that wait for a vector of the current model; failing when one
    has waited longer than VECTORS_OVERDUE_S."""
    model = current_model_name()
    if model is None:
        return True, "none expected (embeddings off or unavailable: see the embedder line)"
    owed = [(target.label, vectors_waiting(target, model)) for target in (EVENTS, KNOWLEDGE)]
    parts = [part for label, waiting in owed for part in _owed_parts(label, waiting)]
    if not parts:
        return True, f"every row has its {model} vector"
    oldest = max((waiting.oldest_s or 0.0) for _, waiting in owed)
    if oldest <= VECTORS_OVERDUE_S:
        return True, "; ".join(parts)
    overdue = human_duration(timedelta(seconds=VECTORS_OVERDUE_S))
    return False, "; ".join(parts) + (f": over {overdue} without one. Is the worker (Celery beat) running? "
                                      "`brain embeddings backfill` embeds them now")


def _owed_parts(label: str, waiting: Waiting) -> list[str]:
    counts = []
    if waiting.missing:
        waited = human_duration(timedelta(seconds=waiting.oldest_s or 0.0))
        counts.append(f"{waiting.missing} without a vector (the oldest for {waited})")
    if waiting.other_model:
        counts.append(f"{waiting.other_model} with another model's, to be re-embedded by the backfill")
    return [f"{label}: {', '.join(counts)}"] if counts else []
