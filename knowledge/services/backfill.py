"""Fill missing or stale vectors (a row whose `embedding_model` is not the current model's name).

Resumable and idempotent: each batch is committed on its own and selected by "still needs a vector",
so a stopped run continues where it stopped and a finished run finds nothing to do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.db.models import Q

from knowledge.embeddings import EmbeddingUnavailable, embed_texts
from knowledge.services.vector_store import vectors_store


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
        vectors, name = embed_texts([target.text_of(row) or " " for row in batch])
        if name != model_name:
            raise EmbeddingUnavailable(f"the embedder changed model during the backfill ({model_name} -> {name})")
        vectors_store(target, [row.pk for row in batch], vectors, name)
        done += len(batch)
        last_id = batch[-1].pk
        if on_batch:
            on_batch(len(batch))
