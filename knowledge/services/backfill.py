"""Fill missing or stale vectors (a row whose `embedding_model` is not the current model's name).

Resumable and idempotent: each batch is committed on its own and selected by "still needs a vector",
so a stopped run continues where it stopped and a finished run finds nothing to do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Count, Min, Q
from django.utils import timezone

from knowledge.embeddings import EmbeddingUnavailable, embed_texts
from knowledge.services.vector_store import pending_of, vectors_store


@dataclass(frozen=True)
class Target:
    """One table to backfill: its model, the text to embed for a row, and the fields that text needs."""

    label: str
    model: type[models.Model]
    text_of: Callable[[Any], str]
    fields: tuple[str, ...]
    extra: Q | None = None


def stale(target: Target, model_name: str) -> models.QuerySet[Any]:
    needs = Q(embedding__isnull=True) | ~Q(embedding_model=model_name)
    if target.extra is not None:
        needs &= target.extra
    return target.model.objects.filter(needs)  # type: ignore[attr-defined,no-any-return]


@dataclass(frozen=True)
class Waiting:
    """A table's rows without a vector of the current model."""

    missing: int  # rows with no vector at all (found by full text only)
    oldest_s: float | None  # how long the oldest of those has waited, in seconds
    other_model: int  # rows with another model's vector (found by full text only until the backfill re-embeds them)


def vectors_waiting(target: Target, model_name: str) -> Waiting:
    """What the batchers and the backfill still owe `target`'s table, across every tenant (an operator's count)."""
    missing = Q(embedding__isnull=True)
    found = stale(target, model_name).aggregate(
        stale=Count("pk"), missing=Count("pk", filter=missing), oldest=Min("created_at", filter=missing))
    oldest = found["oldest"]
    age = max(0.0, (timezone.now() - oldest).total_seconds()) if oldest is not None else None
    return Waiting(missing=found["missing"], oldest_s=age, other_model=found["stale"] - found["missing"])


def embeddings_backfill(
    *, target: Target, model_name: str, batch_size: int = 64, on_batch: Callable[[int], None] | None = None
) -> int:
    """Embeds every stale row of `target` in key order; returns how many rows were updated."""
    done = 0
    last_id = None
    while True:
        qs = stale(target, model_name).order_by("id").only("id", *target.fields)
        if last_id is not None:
            qs = qs.filter(id__gt=last_id)
        batch = list(qs[:batch_size])
        if not batch:
            return done
        rows = [pending_of(target, row) for row in batch]
        vectors, name = embed_texts([row.text or " " for row in rows])
        if name != model_name:
            raise EmbeddingUnavailable(f"the embedder changed model during the backfill ({model_name} -> {name})")
        vectors_store(target, rows, vectors, name)
        done += len(batch)
        last_id = batch[-1].pk
        if on_batch:
            on_batch(len(batch))
