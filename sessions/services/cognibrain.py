"""What the Cognibrain tools record in the current session: command outcomes (and the tool-outcome
memories they teach), corrections, durable memories and patch evidence."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Q

from brain.errors import ForbiddenProject, ValidationFailed
from brain.logs import log_op
from brain.text import text_storable
from knowledge.embeddings import EmbeddingUnavailable, embed_query
from knowledge.guard_models import GuardKind, GuardPattern, GuardSeverity
from knowledge.models import RULE_MAX, RULE_MIN, KnowledgeItem, KnowledgeType, ReviewStatus, review_usable_by
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.guard import guard_alternative_set, guard_rule_add
from knowledge.services.knowledge_vectors import (
    MEMORY_NEAR_DUPLICATE,
    MEMORY_SOURCE,
    knowledge_vectors_deferred,
    lasting,
)
from projects.scope import Principal
from sessions.models import ApplicationRole, Session, SessionEvent, SessionKnowledgeApplication
from sessions.services.correction_kea import correction_derive
from sessions.services.current import session_hold_open, task_tag
from sessions.services.event_vectors import event_vectors_deferred
from sessions.services.events import session_event_log
from sessions.services.policy import Policy, policy_parse

logger = logging.getLogger(__name__)
STDERR_KEEP = 4000
SIMILAR_STDERR = 0.6  # Jaccard of normalised stderr words at or above which two failures are "the same"
SCOPES = ("repo", "user", "global", "task")
_NOISE = re.compile(r"0x[0-9a-f]+|\d+|/[\w./-]+")


def _words(stderr: str) -> set[str]:
    return set(_NOISE.sub("#", stderr.lower()).split())


def stderr_similar(a: str, b: str) -> bool:
    """Same failure: both empty, or most normalised words shared (numbers, addresses and paths ignored)."""
    wa, wb = _words(a), _words(b)
    if not wa and not wb:
        return True
    return bool(wa | wb) and len(wa & wb) / len(wa | wb) >= SIMILAR_STDERR


@dataclass(frozen=True)
class OutcomeRecorded:
    event: SessionEvent
    memory_id: uuid.UUID | None = None
    alternative_for: uuid.UUID | None = None


def _tool_outcome_rule(session: Session, command: str) -> GuardPattern | None:
    return GuardPattern.objects.filter(kind=GuardKind.COMMAND_EXACT, pattern=command,
                                       knowledge__project=session.project, knowledge__deleted_at__isnull=True,
                                       knowledge__superseded_by__isnull=True).first()


def _learn_failure(session: Session, event: SessionEvent, command: str, stderr: str) -> uuid.UUID | None:
    earlier = (SessionEvent.objects.filter(user=session.user, project=session.project, event_type="error",
                                           payload__kind="command_outcome", payload__command=command)
               .exclude(id=event.id).order_by("-occurred_at")[:5])
    if not any(stderr_similar(stderr, str(e.payload.get("stderr", ""))) for e in earlier):
        return None
    if _tool_outcome_rule(session, command) is not None:
        return None
    first_line = next((line.strip() for line in stderr.splitlines() if line.strip()), "no stderr")[:300]
    item = guard_rule_add(owner=session.user, project=session.project, kind=GuardKind.COMMAND_EXACT,
                          pattern=command, severity=GuardSeverity.WARN, source="tool_outcome",
                          text=f"`{command}` failed twice here with: {first_line}")
    return item.id


def _learn_success(session: Session, command: str) -> uuid.UUID | None:
    """The newest alternative-less tool-outcome memory of this session's time becomes solved by `command`."""
    rule = (GuardPattern.objects.filter(kind=GuardKind.COMMAND_EXACT, alternative="",
                                        knowledge__project=session.project, knowledge__owner=session.user,
                                        knowledge__source="tool_outcome", knowledge__deleted_at__isnull=True,
                                        created_at__gte=session.started_at)
            .exclude(pattern=command).order_by("-created_at").first())
    if rule is None:
        return None
    guard_alternative_set(rule=rule, alternative=command)
    return rule.knowledge_id


def outcome_record(*, session: Session, command: str, exit_code: int, stderr: str = "") -> OutcomeRecorded:
    text_storable(command=command, stderr=stderr)
    command = " ".join(command.split())
    if not command:
        raise ValidationFailed("command must not be empty: pass the command line that was run")
    if len(command) > 2000:
        raise ValidationFailed("command is limited to 2000 characters")
    failed = exit_code != 0
    payload = {"kind": "command_outcome", "command": command, "exitCode": exit_code, "stderr": stderr[-STDERR_KEEP:]}
    with transaction.atomic():
        session_hold_open(session)
        event = session_event_log(session=session, event_type="error" if failed else "tool_use",
                                  content=f"{command} {stderr[-500:]}".strip(), payload=payload,
                                  defer_vectors=event_vectors_deferred())
        memory = _learn_failure(session, event, command, stderr) if failed else None
        solved = None if failed else _learn_success(session, command)
    log_op(logger, "cognibrain.outcome", failed=failed, learned=bool(memory), alternative=bool(solved))
    return OutcomeRecorded(event, memory, solved)


@dataclass
class Corrected:
    event: SessionEvent
    stored: list[KnowledgeItem] = field(default_factory=list)
    superseded: list[uuid.UUID] = field(default_factory=list)


def _supersede_contradicted(session: Session, forbidden: str, new: KnowledgeItem) -> list[uuid.UUID]:
    """Live positive rules of this project that recommend the now-forbidden thing give way to `new`."""
    rows = (KnowledgeItem.objects.filter(owner=session.user, project=session.project, deleted_at__isnull=True,
                                         superseded_by__isnull=True, content__icontains=forbidden)
            .exclude(type__in=[KnowledgeType.ANTI_PRINCIPLE, KnowledgeType.GUARD, KnowledgeType.ACTION_ITEM])
            .exclude(id=new.id).exclude(content__iregex=r"\m(not|never|don'?t|avoid)\M"))
    ids = list(rows.values_list("id", flat=True)[:10])
    # Only rows still live as the UPDATE runs: one a concurrent teach or correction superseded meanwhile keeps that
    # link (the audit log names it), and only the rows really superseded here are reported.
    with connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{KnowledgeItem._meta.db_table}" SET superseded_by_id = %s '  # noqa: S608
                       "WHERE id = ANY(%s) AND superseded_by_id IS NULL AND deleted_at IS NULL RETURNING id",
                       [new.id, ids])
        return [row[0] for row in cursor.fetchall()]


def _store(session: Session, *, content: str, type: str, trigger: str = "", rationale: str = "",
           tags: Sequence[str] = ("correction",)) -> KnowledgeItem:
    draft = KnowledgeDraft(content=content[:RULE_MAX], type=type, trigger=trigger[:1000], rationale=rationale[:4000],
                           tags=list(tags), source="user_correction", confidence=1.0)
    return knowledge_create(owner=session.user, project=session.project, draft=draft)


def correction_record(*, session: Session, text: str) -> Corrected:
    """Stores the correction; "not X, use Y" also gives the forbidden action and the procedure (derived by the
    KEA model when one is set, by heuristics otherwise: sessions/services/correction_kea.py)."""
    text_storable(text=text)
    if len(text.strip()) < RULE_MIN or len(text) > RULE_MAX:
        raise ValidationFailed(f"text must be {RULE_MIN}-{RULE_MAX} characters: the operator's correction")
    clean = " ".join(text.split())
    parsed, derived_by = correction_derive(text=clean, user_id=session.user_id)  # a model call: no transaction
    with transaction.atomic():
        session_hold_open(session)
        done = Corrected(session_event_log(session=session, event_type="user_correction", content=clean,
                                           payload={"kind": "correction", "text": clean},
                                           defer_vectors=event_vectors_deferred()))
        if parsed is None:
            done.stored.append(_store(session, content=clean, type=KnowledgeType.HEURISTIC))
        else:
            forbidden, better = parsed
            anti = _store(session, content=f"Do not use {forbidden}; use {better} instead.",
                          type=KnowledgeType.ANTI_PRINCIPLE, trigger=forbidden, rationale=clean)
            recipe = _store(session, content=f"Use {better} (not {forbidden}).", type=KnowledgeType.RECIPE,
                            trigger=forbidden, rationale=clean)
            done.stored += [anti, recipe]
            if recipe.review_status != ReviewStatus.PENDING:  # a held correction retires nothing the team uses
                done.superseded = _supersede_contradicted(session, forbidden, recipe)
        policy = policy_parse(clean)
        if policy is not None:
            done.stored.append(_policy_rule(session, policy, clean, source="user_correction"))
    log_op(logger, "cognibrain.correction", stored=len(done.stored), superseded=len(done.superseded),
           parsed=parsed is not None, derivedBy=derived_by)
    return done


def _policy_rule(session: Session, policy: Policy, text: str, *, source: str) -> KnowledgeItem:
    return guard_rule_add(owner=session.user, project=session.project, kind=policy.kind, pattern=policy.pattern,
                          severity=policy.severity, alternative=policy.alternative, text=text, source=source)


@dataclass(frozen=True)
class MemoryAdded:
    id: uuid.UUID
    stored: bool


def _near_duplicate(rows: Q, content: str) -> KnowledgeItem | None:
    live = KnowledgeItem.objects.filter(rows, deleted_at__isnull=True, superseded_by__isnull=True)
    same = live.filter(content__iexact=content).first()
    if same is not None or knowledge_vectors_deferred():
        # Batched vectors: the model is not waited for here; a near-identical wording is merged into the older
        # row once the batcher has embedded the new one (knowledge_vectors.memory_duplicates_merge).
        return same
    try:
        vector, model = embed_query(content)
    except EmbeddingUnavailable:
        return None
    from pgvector.django import CosineDistance

    close = (live.filter(embedding_model=model).annotate(d=CosineDistance("embedding", vector))
             .filter(d__lte=1 - MEMORY_NEAR_DUPLICATE).order_by("d").first())
    return close


def memory_add(*, principal: Principal, session: Session, content: str, scope: str = "repo") -> MemoryAdded:
    """Stores a durable memory in `scope`; a near-duplicate there returns the existing id, stored=False."""
    text_storable(content=content, scope=scope)
    clean = " ".join(content.split())
    if scope not in SCOPES:
        raise ValidationFailed(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")
    if len(clean) < RULE_MIN or len(content) > RULE_MAX:
        raise ValidationFailed(f"content must be {RULE_MIN}-{RULE_MAX} characters")
    if scope in ("user", "global") and principal.is_project_scoped:
        raise ForbiddenProject(f"a project-scoped token cannot store {scope}-scoped memories; use scope repo")
    project = session.project if scope in ("repo", "task") else None
    tags = [task_tag(session)] if scope == "task" else [f"scope:{scope}"]
    where = (Q(project=project) if project else Q(owner=principal.user, project__isnull=True)) & review_usable_by(
        principal.user)
    with transaction.atomic():
        if scope == "task":  # it lives as long as the session: never written into one already closed
            session_hold_open(session)
        existing = _near_duplicate(where & Q(tags__contains=tags) if scope != "repo" else where & lasting(), clean)
        if existing is not None:
            return MemoryAdded(existing.id, False)
        policy = policy_parse(clean)
        if policy is not None and scope == "repo":
            item = _policy_rule(session, policy, clean, source="memory_add")
        else:
            item = knowledge_create(owner=principal.user, project=project, draft=KnowledgeDraft(
                content=clean, type=KnowledgeType.HEURISTIC, tags=tags, source=MEMORY_SOURCE, confidence=0.9))
    log_op(logger, "cognibrain.memory_add", scope=scope, guard=policy is not None and scope == "repo")
    return MemoryAdded(item.id, True)


def patch_evidence_record(
    *, session: Session, task: str, files: Sequence[str], commands: Sequence[str],
) -> SessionEvent:
    text_storable(task=task, files=list(files), commands=list(commands))
    if not task.strip():
        raise ValidationFailed("task must not be empty: say what was completed")
    if len(files) > 500 or len(commands) > 200:
        raise ValidationFailed("at most 500 files and 200 commands per evidence record")
    used = [str(k) for k in SessionKnowledgeApplication.objects.filter(
        session=session, role=ApplicationRole.INJECTED).values_list("knowledge_id", flat=True)[:100]]
    payload = {"kind": "patch_evidence", "task": task[:2000], "files": [f[:500] for f in files],
               "commands": [c[:1000] for c in commands], "memoriesUsed": used}
    with transaction.atomic():
        session_hold_open(session)
        return session_event_log(session=session, event_type="note",
                                 content=f"{task[:2000]} {' '.join(files)[:2000]}", payload=payload,
                                 defer_vectors=event_vectors_deferred())
