"""Restoring rows of our own JSON export: every stored field comes back as it was exported.

Rows are created through `knowledge_create_many` (validation and vectors as for any write), then their
counters, confidence, decay, pin, dates, deletion and supersession chain are written back. A row lands in
`project` when one is given, else in the caller's project of the exported project's name (created when
missing), else among the caller's personal rows. A row identical to one already there (same project,
type, trigger and rule) is skipped, so importing an export twice creates nothing."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from django.utils.dateparse import parse_datetime

from brain.errors import ValidationFailed
from knowledge.importing.receipts import CREATED, SKIPPED, RuleReceipt, excerpt
from knowledge.importing.types import ParsedRule
from knowledge.models import KnowledgeItem, KnowledgeType
from knowledge.services.absorb import absorb_turn
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from projects.models import Project
from projects.scope import Principal
from projects.services.accounts import project_ensure_named

CHUNK = 500
# Export field -> model field, written back after creation.
_FIELDS = {"confidence": "confidence", "successCount": "success_count", "failureCount": "failure_count",
           "decayScore": "decay_score", "lastUsedAt": "last_used_at", "createdAt": "created_at",
           "updatedAt": "updated_at", "deletedAt": "deleted_at", "pinned": "pinned"}
_DATES = {"lastUsedAt", "createdAt", "updatedAt", "deletedAt"}


def _value(key: str, value: Any) -> Any:
    if key in _DATES and isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is None:
            raise ValidationFailed(f"{key} {value!r} is not an ISO date-time")
        return parsed
    if key == "pinned" and not isinstance(value, bool):
        raise ValidationFailed(f"pinned must be true or false; got {value!r}")
    return value


def _project_of(principal: Principal, project: Project | None, rule: ParsedRule,
                cache: dict[str, Project]) -> Project | None:
    if project is not None:
        return project
    name = str(rule.restore.get("projectName") or "")
    if not name:
        return None
    if name not in cache:
        cache[name] = project_ensure_named(user=principal.user, name=name)[0]
    return cache[name]


def _draft(rule: ParsedRule) -> KnowledgeDraft:
    if rule.type not in KnowledgeType.values:
        raise ValidationFailed(f"type {rule.type!r} is not a knowledge type")
    restore = rule.restore
    return KnowledgeDraft(
        content=rule.content, type=rule.type, trigger=rule.trigger, rationale=rule.rationale, tags=rule.tags,
        source=str(restore.get("source") or ""), confidence=float(restore.get("confidence", 0.7)),
        framework=str(restore.get("framework") or ""), language=str(restore.get("language") or ""),
        stage=str(restore.get("stage") or ""), file_globs=rule.file_globs, always_apply=rule.always_apply,
    )


def _existing(principal: Principal, placed: list[tuple[Project | None, ParsedRule]]) -> set[tuple[Any, ...]]:
    contents = {r.content.strip() for _, r in placed}
    rows = KnowledgeItem.objects.filter(owner=principal.user, content__in=contents)
    return {(p, t, tr, c) for p, t, tr, c in rows.values_list("project_id", "type", "trigger", "content")}


def _write_back(created: list[tuple[KnowledgeItem, ParsedRule]], new_ids: dict[str, uuid.UUID]) -> None:
    fields: set[str] = set()
    for row, rule in created:
        for key, name in _FIELDS.items():
            if key in rule.restore:
                setattr(row, name, _value(key, rule.restore[key]))
                fields.add(name)
        old_successor = str(rule.restore.get("supersededById") or "")
        if old_successor:
            row.superseded_by_id = new_ids.get(old_successor)
            fields.add("superseded_by")
    if fields:
        KnowledgeItem.objects.bulk_update([row for row, _ in created], sorted(fields), batch_size=CHUNK)


def restore_rows(*, principal: Principal, project: Project | None, rules: list[ParsedRule]) -> list[RuleReceipt]:
    """Creates each exported row not already present and restores its fields; one receipt per row."""
    cache: dict[str, Project] = {}
    placed = [(_project_of(principal, project, r, cache), r) for r in rules]
    exported = {str(r.restore.get("id")) for r in rules if r.restore.get("id")}
    absorb_turn(principal.user)  # a concurrent restore of the same export commits first; its rows are then `have`
    have = _existing(principal, placed)
    receipts: dict[int, RuleReceipt] = {}
    batches: dict[Project | None, list[int]] = defaultdict(list)
    for i, (target, rule) in enumerate(placed):
        successor = str(rule.restore.get("supersededById") or "")
        reason = ("already in the brain" if (target.id if target else None, rule.type, rule.trigger.strip(),
                                             rule.content.strip()) in have
                  else "superseded by a row missing from this export" if successor and successor not in exported
                  else "")
        if reason:
            receipts[i] = RuleReceipt(SKIPPED, rule.type, excerpt(rule.content), reason=reason)
        else:
            batches[target].append(i)
    created: list[tuple[KnowledgeItem, ParsedRule]] = []
    new_ids: dict[str, uuid.UUID] = {}
    for target, indexes in batches.items():
        for start in range(0, len(indexes), CHUNK):
            chunk = indexes[start:start + CHUNK]
            rows = knowledge_create_many(owner=principal.user, project=target,
                                         drafts=[_draft(placed[i][1]) for i in chunk])
            for i, row in zip(chunk, rows, strict=True):
                rule = placed[i][1]
                created.append((row, rule))
                new_ids[str(rule.restore.get("id"))] = row.id
                receipts[i] = RuleReceipt(CREATED, rule.type, excerpt(rule.content), id=row.id,
                                          reason=f"restored from {rule.restore.get('id')}")
    _write_back(created, new_ids)
    return [receipts[i] for i in range(len(rules))]

