"""Writing learned findings with semantic dedup: a near-identical row of the same type is reinforced
instead of duplicated. Used by session extraction, cross-session extraction and approved proposals."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Least
from pgvector.django import CosineDistance

from brain.logs import log_op
from brain.sql_rows import xact_lock
from knowledge.models import KnowledgeItem, ReviewStatus
from knowledge.services.create import KnowledgeDraft, _validate, embed_or_none, knowledge_embedding_text
from knowledge.services.review import review_status_for
from knowledge.services.skills import skills_promote
from projects.models import Project, User

logger = logging.getLogger(__name__)

DEDUP_SIMILARITY = 0.85  # cosine similarity at or above which a finding is the same knowledge
REINFORCE_CONFIDENCE = 0.02
MAX_CONFIDENCE = 1.0


@dataclass
class AbsorbResult:
    created: list[KnowledgeItem] = field(default_factory=list)
    merged: list[uuid.UUID] = field(default_factory=list)
    # Per draft, in order: (True, new row id) when created, (False, twin id) when merged into a near-duplicate.
    outcomes: list[tuple[bool, uuid.UUID]] = field(default_factory=list)


def _dedup_scope(owner: User, project: Project | None) -> Q:
    # A personal finding also reinforces the owner's row in the session's project, and vice versa.
    projects = Q(project__isnull=True) | (Q(project=project) if project else Q())
    return Q(owner=owner, deleted_at__isnull=True, superseded_by__isnull=True) & projects


def _elsewhere_scope(owner: User, project: Project | None) -> Q:
    """The owner's learned rows in their other projects (of orgs they are still a member of): a twin there has now
    proved itself in two projects."""
    return (Q(owner=owner, deleted_at__isnull=True, superseded_by__isnull=True, project__isnull=False,
              source_session_id__isnull=False, project__org__memberships__user=owner) & ~Q(project=project))


def _reinforce(twin: KnowledgeItem, *, promote: bool) -> None:
    """+0.02 confidence and one more success; a twin found in another project moves to the owner's scope."""
    changes: dict[str, object] = {"confidence": Least(F("confidence") + REINFORCE_CONFIDENCE, MAX_CONFIDENCE),
                                  "success_count": F("success_count") + 1}
    if promote:
        changes["project"] = None
    KnowledgeItem.objects.filter(id=twin.id).update(**changes)
    if promote:
        log_op(logger, "knowledge.promoted", knowledgeId=str(twin.id)[:8], fromProject=str(twin.project_id)[:8],
               reason="learned_in_two_projects")


def _twin(
    scope: Q, draft: KnowledgeDraft, vector: list[float] | None, model: str
) -> KnowledgeItem | None:
    rows = KnowledgeItem.objects.filter(scope, type=draft.type).exclude(review_status=ReviewStatus.REJECTED)
    if vector is not None:
        return (
            rows.filter(embedding__isnull=False, embedding_model=model)  # another model's distances mean nothing
            .annotate(distance=CosineDistance("embedding", vector))
            .filter(distance__lte=1 - DEDUP_SIMILARITY)
            .order_by("distance", "created_at")
            .first()
        )
    # No embedder: only an identical rule counts as the same knowledge.
    return rows.filter(content__iexact=draft.content.strip()).order_by("created_at").first()


def absorb_turn(owner: User) -> None:
    """Until the transaction ends, the owner's other absorbs wait: each looks for its twin among rows the other has
    committed (two imports of one file at once both found none and stored every rule twice)."""
    xact_lock(f"knowledge-absorb:{owner.pk}")


ScopedDraft = tuple[Project | None, KnowledgeDraft]


def _review_lookup(owner: User) -> Callable[[Project | None], str]:
    """`review_status_for` once per project (an import may bring thousands of rows into one project)."""
    known: dict[object, str] = {}

    def review_of(project: Project | None) -> str:
        key = project.pk if project is not None else None
        if key not in known:
            known[key] = review_status_for(author=owner, project=project)
        return known[key]

    return review_of


def knowledge_absorb(
    *, owner: User, drafts: Sequence[ScopedDraft], dedup_project: Project | None = None,
    before_commit: Callable[[AbsorbResult], None] | None = None, source_session_id: uuid.UUID | None = None,
    reinforce: bool = True,
) -> AbsorbResult:
    """Creates each (project, draft) unless a same-type row of the owner (personal or in `dedup_project`)
    lies within cosine 0.85: that row gets confidence +0.02 and success +1 instead. Embeds before the
    transaction; `before_commit` runs inside it (to mark a job done), so result and bookkeeping commit together.
    With `source_session_id` (rows learned from a session) a twin among the owner's learned rows of another
    project is reinforced and promoted to the owner's scope (project null): it has proved itself in two projects.
    `reinforce=False` (imports) leaves the twin as it is: a rule read from a file is not evidence it worked."""
    for _, draft in drafts:
        _validate(draft)
    vectors, model = embed_or_none(
        [knowledge_embedding_text(trigger=d.trigger, content=d.content) for _, d in drafts],
        op="knowledge.embed_failed",
    )
    elsewhere = _elsewhere_scope(owner, dedup_project) if source_session_id else None
    result = AbsorbResult()
    review_of = _review_lookup(owner)
    with transaction.atomic():
        absorb_turn(owner)
        for i, (project, draft) in enumerate(drafts):
            vector = vectors[i] if vectors else None
            # The owner's personal rows and those of the project the draft goes to (or the one given for all):
            # the daily extract's patterns each go to their own project and met only personal rows, so a pattern
            # supported again was stored again instead of reinforced.
            twin = _twin(_dedup_scope(owner, dedup_project or project), draft, vector, model)
            promote = twin is None and elsewhere is not None and project is not None
            if promote and elsewhere is not None:
                twin = _twin(elsewhere, draft, vector, model)
            if twin is not None and reinforce:
                _reinforce(twin, promote=promote)
            if twin is not None:
                result.merged.append(twin.id)
                result.outcomes.append((False, twin.id))
                continue
            result.created.append(KnowledgeItem.objects.create(
                owner=owner, project=project, type=draft.type, trigger=draft.trigger.strip(),
                content=draft.content.strip(), rationale=draft.rationale.strip(), tags=list(draft.tags),
                source=draft.source, confidence=draft.confidence, framework=draft.framework,
                language=draft.language, stage=draft.stage, embedding=vector, embedding_model=model if vector else "",
                source_session_id=source_session_id, review_status=review_of(project),
                file_globs=list(draft.file_globs), always_apply=draft.always_apply,
            ))
            result.outcomes.append((True, result.created[-1].id))
        skills_promote(ids=result.merged)  # a recipe learned again has worked again
        if before_commit is not None:
            before_commit(result)
    return result
