"""Guard rules (knowledge of type `guard` with a pattern) and the stored guard decisions."""

from __future__ import annotations

import logging

from django.db import connection, transaction

from brain.errors import ValidationFailed
from brain.logs import log_op
from brain.sql_rows import ASYNC_COMMIT_CALL, xact_lock
from brain.text import text_storable
from knowledge.guard_models import (
    GUARD_ACTION_MAX,
    GUARD_PATTERN_MAX,
    GuardDecision,
    GuardKind,
    GuardPattern,
    GuardSeverity,
)
from knowledge.guard_regex import command_regex_compile
from knowledge.models import KnowledgeItem, KnowledgeType
from knowledge.selectors.guard import Verdict, guard_check
from knowledge.services.create import KnowledgeDraft, knowledge_create
from projects.models import Project, User

logger = logging.getLogger(__name__)


def _check_pattern(kind: str, pattern: str) -> None:
    if kind not in GuardKind.values:
        raise ValidationFailed(f"kind must be one of {', '.join(GuardKind.values)}; got {kind!r}")
    if not pattern.strip() or len(pattern) > GUARD_PATTERN_MAX:
        raise ValidationFailed(f"pattern must be 1-{GUARD_PATTERN_MAX} characters")
    if kind == GuardKind.COMMAND_REGEX:
        command_regex_compile(pattern.strip())  # the guard matches it with RE2: refused here, never skipped there


def guard_rule_add(
    *, owner: User, project: Project | None, kind: str, pattern: str, text: str,
    severity: str = GuardSeverity.BLOCK, alternative: str = "", source: str = "taught",
) -> KnowledgeItem:
    """Stores one guard rule: its text as a knowledge item of type `guard`, its pattern beside it. The owner's
    live rule of the same kind and pattern in that scope is not stored twice (the same correction said twice made
    two rules that answered every check twice): it takes the new severity, and the new alternative when one is
    given, and is returned."""
    text_storable(kind=kind, pattern=pattern, text=text, severity=severity, alternative=alternative)
    _check_pattern(kind, pattern)
    if severity not in GuardSeverity.values:
        raise ValidationFailed(f"severity must be one of {', '.join(GuardSeverity.values)}; got {severity!r}")
    draft = KnowledgeDraft(content=text, type=KnowledgeType.GUARD, trigger=pattern, rationale=alternative,
                           tags=[f"guard:{kind}"], source=source, confidence=1.0)
    with transaction.atomic():
        same = _same_guard(owner=owner, project=project, kind=kind, pattern=pattern.strip())
        if same is not None:
            _restated(same, severity=severity, alternative=alternative.strip())
            item = same.knowledge
        else:
            item = knowledge_create(owner=owner, project=project, draft=draft)
            GuardPattern.objects.create(knowledge=item, kind=kind, pattern=pattern.strip(), severity=severity,
                                        alternative=alternative.strip())
    log_op(logger, "guard.rule_add", kind=kind, severity=severity, project=str(project.id)[:8] if project else None,
           restated=same is not None)
    return item


def _same_guard(*, owner: User, project: Project | None, kind: str, pattern: str) -> GuardPattern | None:
    """The owner's live rule of this kind and pattern in this scope, locked. The same rule added twice at once takes
    turns (both found none and both stored one), and a delete committed meanwhile is seen."""
    key = f"guard:{owner.pk}:{project.pk if project else ''}:{kind}:{pattern}"
    xact_lock(key)
    return (GuardPattern.objects.select_for_update().select_related("knowledge")
            .filter(kind=kind, pattern=pattern, knowledge__owner=owner, knowledge__project=project,
                    knowledge__deleted_at__isnull=True, knowledge__superseded_by__isnull=True).first())


def _restated(rule: GuardPattern, *, severity: str, alternative: str) -> None:
    """A rule said again: the newer severity, the newer alternative when there is one."""
    changed = {name: value for name, value in (("severity", severity), ("alternative", alternative))
               if value and getattr(rule, name) != value}
    for name, value in changed.items():
        setattr(rule, name, value)
    if changed:
        rule.save(update_fields=[*changed, "updated_at"])


def guard_alternative_set(*, rule: GuardPattern, alternative: str) -> None:
    text_storable(alternative=alternative)
    rule.alternative = alternative.strip()
    rule.save(update_fields=["alternative", "updated_at"])


def _decision_record(decision: GuardDecision) -> None:
    """Stores a decision with an asynchronous commit: the record is a log of what the agent was told (the
    verdict does not depend on it), and waiting for its WAL flush was most of a check's time (~10 ms of
    ~12 ms p50 on the dev machine). A crash can lose the last fraction of a second of decisions, never
    corrupt anything. Inside a caller's transaction it is stored plainly, leaving that commit as it is."""
    if connection.in_atomic_block:
        decision.save()
        return
    fields = GuardDecision._meta.concrete_fields
    values = [f.get_db_prep_save(f.pre_save(decision, True), connection) for f in fields]
    # One statement in its own (autocommit) transaction: set_config(..., true) makes just this commit asynchronous.
    columns = ", ".join(f'"{f.column}"' for f in fields)
    sql = (f'INSERT INTO "{GuardDecision._meta.db_table}" ({columns}) SELECT {", ".join(["%s"] * len(values))} '  # noqa: S608
           f"FROM (SELECT {ASYNC_COMMIT_CALL}) AS async_commit")
    with connection.cursor() as cursor:
        cursor.execute(sql, values)


def guard_decide(*, owner: User, project: Project | None, action: str) -> Verdict:
    """Checks `action`, stores the decision and logs `op=guard.decision`."""
    text_storable(action=action)
    if not action.strip():
        raise ValidationFailed("action must not be empty: pass the command or the file edit you plan")
    if len(action) > GUARD_ACTION_MAX:
        raise ValidationFailed(f"action is limited to {GUARD_ACTION_MAX} characters")
    verdict = guard_check(owner_id=owner.id, project_id=project.id if project else None, action=action)
    _decision_record(GuardDecision(owner=owner, project=project, action=action.strip(), allowed=verdict.allowed,
                                   warnings=verdict.warnings, blockers=verdict.blockers, rule_ids=verdict.rule_ids))
    log_op(logger, "guard.decision", allowed=verdict.allowed, blockers=len(verdict.blockers),
           warnings=len(verdict.warnings), project=str(project.id)[:8] if project else None)
    return verdict
