"""Import of rule files, MCP memory JSONL and our own JSON export: the one service the CLI, REST and dashboard call.

Each file is parsed, then stored in its own savepoint: a file that fails (unreadable, broken front matter,
a bad line) changes nothing and the other files still import. Markdown and memory rules go through the
semantic dedup of `knowledge_absorb` (a rule within cosine 0.85 of an existing same-type rule is merged into
it, i.e. not stored again); a rule identical to one already stored is skipped, so importing the same files
twice creates nothing and changes nothing. An export restores its rows field by field (imports_restore)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from brain.errors import BrainError
from brain.logs import log_op
from brain.text import text_problem
from knowledge.importing.formats import parse
from knowledge.importing.receipts import CREATED, MERGED, SKIPPED, FileReceipt, ImportReport, RuleReceipt, excerpt
from knowledge.importing.types import ImportRejected, ParsedRule
from knowledge.models import (
    FILE_GLOB_MAX,
    FILE_GLOBS_MAX,
    RATIONALE_MAX,
    RULE_MAX,
    RULE_MIN,
    TAG_MAX,
    TAGS_MAX,
    TRIGGER_MAX,
    KnowledgeItem,
)
from knowledge.services.absorb import absorb_turn, knowledge_absorb
from knowledge.services.create import KnowledgeDraft
from knowledge.services.imports_restore import restore_rows
from projects.models import Project
from projects.scope import Principal
from projects.services.resolve import project_resolve

logger = logging.getLogger(__name__)
IMPORT_SOURCE = "import"
IMPORT_CONFIDENCE = 0.9  # written down by the team, not yet seen to work: under taught (1.0), over learned (0.7)
TEACHABLE = {"reflex", "recipe", "heuristic", "principle", "anti_principle", "rule", "decision"}
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ImportFile:
    name: str  # the path or upload name: it decides the format (CLAUDE.md, x.mdc, memory.jsonl, export.json)
    data: bytes


def _skip_reason(rule: ParsedRule) -> str:
    if rule.type not in TEACHABLE:
        return f"type {rule.type!r} cannot be imported from a rule file"
    if len(rule.content.strip()) < RULE_MIN:
        return f"shorter than {RULE_MIN} characters"
    if len(rule.content) > RULE_MAX:
        return f"{len(rule.content)} characters, over the {RULE_MAX}-character limit of a rule; split it"
    found = text_problem([rule.content, rule.trigger, rule.rationale, *rule.tags, *rule.file_globs], "rule")
    return f"holds text the database cannot store ({found[1]})" if found else ""


def _draft(rule: ParsedRule) -> KnowledgeDraft:
    tags = list(dict.fromkeys(t.strip().lower()[:TAG_MAX] for t in rule.tags if t.strip()))[:TAGS_MAX]
    globs = [g for g in dict.fromkeys(rule.file_globs) if len(g) <= FILE_GLOB_MAX][:FILE_GLOBS_MAX]
    return KnowledgeDraft(
        content=rule.content.strip(), type=rule.type, trigger=rule.trigger.strip()[:TRIGGER_MAX],
        rationale=rule.rationale.strip()[:RATIONALE_MAX], tags=tags, source=IMPORT_SOURCE,
        confidence=IMPORT_CONFIDENCE, file_globs=globs, always_apply=rule.always_apply,
    )


def _stored(principal: Principal, project: Project | None, drafts: list[KnowledgeDraft]) -> dict[tuple[str, str], str]:
    """(type, content) -> id of identical live rows already in the dedup scope (the owner's, personal or here)."""
    scope = Q(project__isnull=True) | (Q(project=project) if project else Q())
    rows = KnowledgeItem.objects.filter(scope, owner=principal.user, deleted_at__isnull=True,
                                        superseded_by__isnull=True, content__in={d.content for d in drafts})
    return {(t, c): str(i) for t, c, i in rows.values_list("type", "content", "id")}


def _absorb_rules(principal: Principal, project: Project | None, rules: list[ParsedRule]) -> list[RuleReceipt]:
    receipts: dict[int, RuleReceipt] = {}
    todo: list[tuple[int, KnowledgeDraft]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, rule in enumerate(rules):
        if reason := _skip_reason(rule):
            receipts[i] = RuleReceipt(SKIPPED, rule.type, excerpt(rule.content), rule.line, reason=reason)
            continue
        draft = _draft(rule)
        key = (draft.type, draft.content)
        if key in seen:
            receipts[i] = RuleReceipt(SKIPPED, rule.type, excerpt(rule.content), rule.line,
                                      reason=f"repeats line {seen[key]} of this file")
            continue
        seen[key] = rule.line
        todo.append((i, draft))
    if todo:
        absorb_turn(principal.user)  # before the lookup of identical rows: a concurrent import's are then committed
    stored = _stored(principal, project, [d for _, d in todo])
    fresh = [(i, d) for i, d in todo if (d.type, d.content) not in stored]
    for i, d in todo:
        if (d.type, d.content) in stored:
            receipts[i] = RuleReceipt(SKIPPED, d.type, excerpt(d.content), rules[i].line,
                                      reason=f"already in the brain as {stored[(d.type, d.content)]}")
    outcomes = knowledge_absorb(owner=principal.user, drafts=[(project, d) for _, d in fresh], dedup_project=project,
                                reinforce=False).outcomes if fresh else []
    for (i, d), (created, pk) in zip(fresh, outcomes, strict=True):
        receipts[i] = RuleReceipt(CREATED if created else MERGED, d.type, excerpt(d.content), rules[i].line, pk,
                                  "" if created else "a near-duplicate (cosine >= 0.85) of this existing rule")
    return [receipts[i] for i in range(len(rules))]


def _one_file(principal: Principal, project: Project | None, file: ImportFile, named: bool) -> FileReceipt:
    receipt = FileReceipt(file.name)
    try:
        receipt.format, rules = parse(file.name, file.data)
        with transaction.atomic():
            if receipt.format == "brain-export-json":
                receipt.rules = restore_rows(principal=principal, project=project if named else None, rules=rules)
            else:
                receipt.rules = _absorb_rules(principal, project, rules)
    except (ImportRejected, BrainError) as exc:
        receipt.error, receipt.rules = str(exc), []
    return receipt


def knowledge_import(
    *, principal: Principal, files: Sequence[ImportFile], project_name: str | None = None,
    project_id: str | None = None, dry_run: bool = False, progress: Progress | None = None,
) -> ImportReport:
    """Imports every file (each all or nothing) into the resolved project; with dry_run, reports what an import
    would do and rolls all of it back. Receipts say per file and per rule: created, merged (into which) or skipped."""
    with transaction.atomic() if dry_run else nullcontext():
        resolved = project_resolve(principal=principal, project_id=project_id, project_name=project_name).project
        named = bool(project_name or project_id) or principal.is_project_scoped
        report = ImportReport(dry_run=dry_run, project=resolved.name)
        for n, file in enumerate(files, start=1):
            report.files.append(_one_file(principal, resolved, file, named))
            if progress is not None:
                progress(n, len(files), file.name)
        if dry_run:
            transaction.set_rollback(True)
    log_op(logger, "knowledge.import", files=len(files), created=report.total(CREATED), merged=report.total(MERGED),
           skipped=report.total(SKIPPED), failed=report.failed, dry_run=dry_run)
    return report
