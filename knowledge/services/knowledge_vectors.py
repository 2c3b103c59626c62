"""Knowledge written on the request path (taught rules, corrections, memories, guard rules) gets its vector off
that path: the row and its full-text commit at once, the in-process batcher (`vector_batcher`) embeds it after
the commit, so it is findable by full-text at once and by meaning within a fraction of a second.

Near-duplicates without a vector at write time: the write-time checks that never needed the model stay where
they are (teach reaffirms the same words, case and spacing aside; memory_add returns a row with the same
text). The one check that did need it, memory_add's cosine >= MEMORY_NEAR_DUPLICATE, runs here instead, in the
batcher's thread right after the vector is stored: a newer memory that close to an older live one in the same
scope is merged into it (superseded_by the older row), so retrieval keeps one copy. Taught rules are never
merged by meaning: two different rules a user stated can lie close in vector space ("use tabs" / "use spaces").

A row whose vector never came (the process died with ids queued, a full queue) is embedded by the beat task
`knowledge.tasks.embed_pending_knowledge`. BRAIN_KNOWLEDGE_VECTORS=inline embeds before the insert instead.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from pgvector.django import CosineDistance

from brain.logs import log_op
from brain.sql_rows import failure_contained
from knowledge.embeddings import EmbeddingUnavailable, current_model_name
from knowledge.models import KnowledgeItem, KnowledgeType, review_usable_by
from knowledge.services.backfill import Target, embeddings_backfill
from knowledge.services.vector_batcher import BATCH_MAX, VectorBatcher, embed_rows

logger = logging.getLogger("knowledge")
MEMORY_SOURCE = "memory_add"
MEMORY_NEAR_DUPLICATE = 0.95  # cosine similarity at or above which a memory is the one already stored
REPO_SCOPE_TAG = "scope:repo"
# A memory stored with scope `task` carries `task:<session id>` and is dropped when that session ends.
TASK_TAG_PREFIX = "task:"


def lasting() -> Q:
    """Rows that outlive every session: a repo memory must never be merged into, or answered by, a task memory
    of some session, which goes when that session ends and would take the repo memory with it."""
    table = KnowledgeItem._meta.db_table
    sql = f'NOT EXISTS (SELECT 1 FROM unnest("{table}"."tags") AS tag WHERE tag LIKE %s)'  # noqa: S608 - the model's table
    return Q(RawSQL(sql, [TASK_TAG_PREFIX + "%"], output_field=BooleanField()))  # noqa: S611 - a parameter


def knowledge_embedding_text(*, trigger: str, content: str) -> str:
    """What is embedded for an item: its trigger and rule (the rationale explains, it does not match)."""
    return f"{trigger.strip()}\n{content.strip()}".strip()


def knowledge_vectors_deferred() -> bool:
    return getattr(settings, "BRAIN_KNOWLEDGE_VECTORS", "batched") != "inline"


def _memory_scope(row: KnowledgeItem) -> Q:
    """Where memory_add looks for the memory already stored: the project (or the owner's personal rows), and
    for task/user/global memories only rows carrying the same scope tags."""
    where = Q(project_id=row.project_id) if row.project_id else Q(owner_id=row.owner_id, project__isnull=True)
    if REPO_SCOPE_TAG not in row.tags:
        where &= Q(tags__contains=row.tags)
    else:
        where &= lasting()
    return where & review_usable_by(row.owner_id)


def _older_twin(row: KnowledgeItem) -> KnowledgeItem | None:
    live = KnowledgeItem.objects.filter(_memory_scope(row), deleted_at__isnull=True, superseded_by__isnull=True,
                                        embedding_model=row.embedding_model, created_at__lt=row.created_at)
    return (live.exclude(id=row.id).annotate(d=CosineDistance("embedding", row.embedding))
            .filter(d__lte=1 - MEMORY_NEAR_DUPLICATE).order_by("d", "created_at").first())


def memory_duplicates_merge(ids: list[Any]) -> int:
    """Merges each freshly embedded memory among `ids` into an older near-identical live one; returns how many."""
    rows = KnowledgeItem.objects.filter(id__in=ids, source=MEMORY_SOURCE, type=KnowledgeType.HEURISTIC,
                                        embedding__isnull=False, deleted_at__isnull=True, superseded_by__isnull=True)
    merged = 0
    for row in rows.order_by("created_at"):  # oldest first: of two new twins the older one stays
        twin = _older_twin(row)
        if twin is None:
            continue
        merged += KnowledgeItem.objects.filter(id=row.id, superseded_by__isnull=True).update(superseded_by=twin)
        log_op(logger, "knowledge.memory_merged", knowledgeId=str(row.id)[:8], into=str(twin.id)[:8])
    return merged


KNOWLEDGE = Target("knowledge items", KnowledgeItem,
                   lambda row: knowledge_embedding_text(trigger=row.trigger, content=row.content),
                   ("trigger", "content"))
KNOWLEDGE_BATCHER = VectorBatcher(KNOWLEDGE, after=memory_duplicates_merge)


def knowledge_vectors_follow(ids: list[Any]) -> None:
    """Vectors for rows whose text was just written without one: from the batcher once the transaction commits, or
    (BRAIN_KNOWLEDGE_VECTORS=inline) now, in this thread. A failing model leaves them to the backfill."""
    if knowledge_vectors_deferred():
        KNOWLEDGE_BATCHER.submit_after_commit(ids)
        return
    try:
        embed_rows(KNOWLEDGE, ids)
    except EmbeddingUnavailable as exc:
        log_op(logger, "knowledge.embed_failed", level=logging.WARNING, count=len(ids), reason=str(exc)[:200])


def knowledge_vectors_now(ids: list[Any]) -> int:
    """Vectors for rows a reader needs before the batcher has got to them, embedded and stored in this thread (with
    the batcher's merge); returns how many were stored. A failing model or store leaves them to the batcher and the
    backfill, and the reader goes on with what it found: inside a caller's transaction a savepoint keeps a failed
    statement from aborting it."""
    try:
        with failure_contained():
            stored = embed_rows(KNOWLEDGE, ids)
            if stored:
                memory_duplicates_merge(ids)
    except (EmbeddingUnavailable, DatabaseError) as exc:
        log_op(logger, "knowledge.embed_failed", level=logging.WARNING, count=len(ids), reason=str(exc)[:200])
        return 0
    return stored


def knowledge_vectors_backfill() -> int:
    """Vectors for knowledge rows that have none (their batcher never ran), with the merge the batcher does; then
    new vectors for rows another model embedded (after an upgrade), which were merged when first embedded."""
    model = current_model_name()
    if model is None:
        return 0  # embeddings off or broken: nothing to do until they work again
    done, last = 0, None
    while True:
        pending = KnowledgeItem.objects.filter(embedding__isnull=True).order_by("id")
        ids = list((pending.filter(id__gt=last) if last else pending).values_list("id", flat=True)[:BATCH_MAX])
        if not ids:
            break
        done += embed_rows(KNOWLEDGE, ids)
        memory_duplicates_merge(ids)
        last = ids[-1]
    done += embeddings_backfill(target=KNOWLEDGE, model_name=model)
    if done:
        log_op(logger, "vectors.backfill", table=KNOWLEDGE.label, rows=done)
    return done
