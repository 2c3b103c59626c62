"""Writes of knowledge. Embedding happens before the transaction, or after the commit in the batcher's thread
(`knowledge_vectors`, the default for single rows written on the request path), and never fails a write."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction

from brain.errors import ValidationFailed
from brain.logs import log_op
from brain.text import text_storable
from knowledge.embeddings import EmbeddingUnavailable, embed_texts
from knowledge.models import FILE_GLOB_MAX, FILE_GLOBS_MAX, KnowledgeItem, KnowledgeType
from knowledge.services.knowledge_vectors import KNOWLEDGE_BATCHER, knowledge_embedding_text, knowledge_vectors_deferred
from knowledge.services.review import review_status_for
from projects.models import Project, User

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class KnowledgeDraft:
    content: str
    type: str = KnowledgeType.RULE
    trigger: str = ""
    rationale: str = ""
    tags: Sequence[str] = field(default_factory=tuple)
    source: str = ""
    confidence: float = 0.7
    framework: str = ""
    language: str = ""
    stage: str = ""
    file_globs: Sequence[str] = field(default_factory=tuple)  # path scope (a rule file's `globs:`)
    always_apply: bool = False  # unconditional (a rule file's `alwaysApply: true`)


def embed_or_none(texts: Sequence[str], *, op: str) -> tuple[list[list[float]] | None, str]:
    """Vectors for `texts`, or None (logged) when the embedder is off or failing; the backfill catches up."""
    try:
        return embed_texts(texts)
    except EmbeddingUnavailable as exc:
        log_op(logger, op, level=logging.WARNING, count=len(texts), reason=str(exc)[:200])
        return None, ""


def _validate(draft: KnowledgeDraft) -> None:
    # Every knowledge write passes here, extraction from model output included.
    text_storable(rule=draft.content, type=draft.type, trigger=draft.trigger, rationale=draft.rationale,
                  tags=list(draft.tags), source=draft.source, framework=draft.framework, language=draft.language,
                  stage=draft.stage)
    if draft.type not in KnowledgeType.values:
        raise ValidationFailed(f"type must be one of {', '.join(KnowledgeType.values)}; got {draft.type!r}")
    if not draft.content.strip():
        raise ValidationFailed("content (the rule text) must not be empty")
    text_storable(file_globs=list(draft.file_globs))
    if len(draft.file_globs) > FILE_GLOBS_MAX or any(len(g) > FILE_GLOB_MAX for g in draft.file_globs):
        raise ValidationFailed(f"file globs: at most {FILE_GLOBS_MAX}, each at most {FILE_GLOB_MAX} characters")
    if not 0.0 <= draft.confidence <= 1.0:
        raise ValidationFailed(f"confidence must be between 0 and 1; got {draft.confidence}")


def knowledge_create_many(
    *, owner: User, project: Project | None, drafts: Sequence[KnowledgeDraft], defer_vectors: bool = False,
) -> list[KnowledgeItem]:
    """Stores every draft (all validated first, all or nothing), each with a vector when the embedder works;
    with defer_vectors the vectors are computed after the commit, in the batcher's thread."""
    for draft in drafts:
        _validate(draft)
    vectors, model = (None, "") if defer_vectors else embed_or_none(
        [knowledge_embedding_text(trigger=d.trigger, content=d.content) for d in drafts], op="knowledge.embed_failed"
    )
    review = review_status_for(author=owner, project=project)  # every write path: taught, learned, imported
    rows = [
        KnowledgeItem(
            owner=owner, project=project, type=d.type, trigger=d.trigger.strip(), content=d.content.strip(),
            rationale=d.rationale.strip(), tags=list(d.tags), source=d.source, confidence=d.confidence,
            framework=d.framework, language=d.language, stage=d.stage,
            file_globs=list(d.file_globs), always_apply=d.always_apply,
            embedding=vectors[i] if vectors else None, embedding_model=model, review_status=review,
        )
        for i, d in enumerate(drafts)
    ]
    with transaction.atomic():
        created = KnowledgeItem.objects.bulk_create(rows)
        if defer_vectors:
            KNOWLEDGE_BATCHER.submit_after_commit([row.pk for row in created])
        return created


def knowledge_create(
    *, owner: User, project: Project | None, draft: KnowledgeDraft, defer_vectors: bool | None = None,
) -> KnowledgeItem:
    """Stores one item; its vector follows from the batcher (BRAIN_KNOWLEDGE_VECTORS=inline: before the insert)."""
    defer = knowledge_vectors_deferred() if defer_vectors is None else defer_vectors
    return knowledge_create_many(owner=owner, project=project, drafts=[draft], defer_vectors=defer)[0]
