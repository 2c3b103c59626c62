"""Checking a planned action against guard rules: deterministic patterns first, stored forbidden actions
(anti_principle) by meaning second. Reads only; the decision is stored by `knowledge.services.guard`.

Rules are compiled once per scope and kept in memory until the scope's rule set changes: database triggers
bump a version per scope on every rule write (GuardRuleVersion), and each check reads the two versions
it depends on by primary key, so a check at 10,000 rules stays in milliseconds. Semantic matches only
warn: a model's similarity is never grounds to refuse an action.
"""

from __future__ import annotations

import functools
import logging
import re
import shlex
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from django.conf import settings
from django.db import connection
from django.db.models import Q
from pgvector import Vector

from brain.errors import ValidationFailed
from brain.logs import log_op
from brain.sql_rows import execute_prepared
from knowledge.embeddings import EmbeddingUnavailable, embed_query
from knowledge.globs import Glob, compiled_glob
from knowledge.guard_models import GuardCalibration, GuardKind, GuardPattern, GuardRuleVersion, GuardSeverity
from knowledge.guard_regex import CommandRegex, command_regex_compile
from knowledge.models import REVIEW_HELD, KnowledgeItem, KnowledgeType

logger = logging.getLogger(__name__)

# Cosine similarity at or above which a stored forbidden action warns, until `brain guard calibrate` has
# measured one for the embedding model in use (MiniLM: paraphrases of one instruction score ~0.65-0.9,
# unrelated shell commands < 0.45). BRAIN_GUARD_SEMANTIC_THRESHOLD overrides both.
SEMANTIC_THRESHOLD = 0.62
EDIT_VERBS = {"edit", "write", "modify", "update", "create", "delete", "remove", "patch", "change", "touch", "open"}
_PATHISH = re.compile(r"^[\w@.~+-]*(?:/[\w@.*+-]*)+$|^[\w@+-]+\.[A-Za-z0-9]{1,8}$")


@dataclass(frozen=True)
class Rule:
    id: str
    kind: str
    pattern: str
    severity: str
    text: str
    alternative: str
    regex: CommandRegex | None = None  # a command_regex rule's
    glob: Glob | None = None  # a path_glob rule's


@dataclass
class Verdict:
    allowed: bool = True
    warnings: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    rule_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ParsedAction:
    text: str
    command: str
    paths: tuple[str, ...]


def parse_action(action: str) -> ParsedAction:
    """The command line (when the action is not a file edit) and every path-like word in it."""
    text = " ".join(action.split())
    try:
        words = shlex.split(text)
    except ValueError:  # an unbalanced quote: plain splitting is good enough to find paths
        words = text.split()
    is_edit = bool(words) and words[0].lower().rstrip(":") in EDIT_VERBS
    paths = tuple(_normal_path(w) for w in words[1 if is_edit else 0:] if _PATHISH.match(w.strip(",;\"'")))
    return ParsedAction(text=text, command="" if is_edit else text, paths=paths)


def _normal_path(word: str) -> str:
    word = word.strip(",;\"'")
    return word[2:] if word.startswith("./") else word


_SKIPPED: set[tuple[str, str]] = set()  # (rule id, pattern) already logged by this process


def _skipped(row: GuardPattern, problem: str) -> None:
    """One warning per process for a stored rule the guard cannot run (`brain doctor`'s guard line lists them all)."""
    key = (str(row.knowledge_id), row.pattern)
    if key in _SKIPPED:
        return
    _SKIPPED.add(key)
    log_op(logger, "guard.rule_skipped", level=logging.WARNING, rule=key[0], kind=row.kind, pattern=row.pattern,
           owner=str(row.knowledge.owner_id), problem=problem)


def _compile(row: GuardPattern) -> Rule | None:
    regex: CommandRegex | None = None
    if row.kind == GuardKind.COMMAND_REGEX:
        try:
            regex = command_regex_compile(row.pattern)
        except ValidationFailed as exc:
            # Stored before patterns had to be RE2 syntax (or written past the service). Running it with Python's
            # backtracking engine could stall every check of the scope, and failing the check would stop the agent
            # for a rule nobody can fix from there: the rule is skipped, logged, and reported by `brain doctor`.
            _skipped(row, exc.message)
            return None
    item = row.knowledge
    return Rule(id=str(item.id), kind=row.kind, pattern=row.pattern, severity=row.severity,
                text=" ".join(item.content.split()), alternative=row.alternative, regex=regex,
                glob=compiled_glob(row.pattern) if row.kind == GuardKind.PATH_GLOB else None)


def _matches(rule: Rule, parsed: ParsedAction) -> bool:
    kind = rule.kind
    if kind == GuardKind.COMMAND_PREFIX:
        return bool(parsed.command) and (parsed.command == rule.pattern or parsed.command.startswith(rule.pattern + " ")
                                          or (parsed.command.startswith(rule.pattern) and rule.pattern.endswith(" ")))
    if kind == GuardKind.COMMAND_EXACT:
        return bool(parsed.command) and " ".join(parsed.command.split()) == rule.pattern
    if kind == GuardKind.COMMAND_REGEX:
        return bool(parsed.command) and rule.regex is not None and rule.regex.search(parsed.command) is not None
    if kind == GuardKind.PATH_GLOB:
        return rule.glob is not None and any(rule.glob.matches(p) for p in parsed.paths)
    if kind == GuardKind.LOCK_FILE:
        return any(PurePosixPath(p).name == rule.pattern for p in parsed.paths)
    if kind == GuardKind.GENERATED_MARKER:
        return rule.pattern.lower() in parsed.text.lower()
    return False


def guard_scope_filter(*, owner_id: uuid.UUID, project_id: uuid.UUID | None) -> Q:
    """Guard rules of one project plus the owner's own project-less ones."""
    mine = Q(knowledge__owner_id=owner_id, knowledge__project__isnull=True)
    live = Q(knowledge__deleted_at__isnull=True, knowledge__superseded_by__isnull=True) & ~Q(
        knowledge__review_status__in=REVIEW_HELD)
    return (Q(knowledge__project_id=project_id) | mine if project_id else mine) & live


# A stored forbidden action that counts: live, clear of review (its parameters: `anti`, `held`).
_LIVE_FORBIDDEN = ("type = %(anti)s AND deleted_at IS NULL AND superseded_by_id IS NULL "
                   "AND NOT (review_status = ANY(%(held)s))")


@functools.cache
def _state_sql() -> str:
    versions, items, live = GuardRuleVersion._meta.db_table, KnowledgeItem._meta.db_table, _LIVE_FORBIDDEN
    # One EXISTS per half of the scope, each an exact lookup in its own index ((project, type), (owner, project,
    # type)). Their OR in one EXISTS was planned, once the table had statistics, as a walk of every anti-principle of
    # every tenant filtered row by row (2.6 ms at 1,400 of them, on every check; docs/benchmarks.md, twentieth pass).
    # Table names come from the models; every value is a parameter.
    return (f"SELECT (SELECT COALESCE(SUM(version), 0) FROM {versions} WHERE scope = ANY(%(scopes)s)), "  # noqa: S608
            f"EXISTS (SELECT 1 FROM {items} WHERE project_id = %(project)s AND {live}) "
            f"OR EXISTS (SELECT 1 FROM {items} WHERE owner_id = %(owner)s AND project_id IS NULL AND {live})")


def scope_state(*, owner_id: uuid.UUID, project_id: uuid.UUID | None) -> tuple[int, bool]:
    """(rule-set version, whether any live forbidden action is stored) of one scope, in one round trip.

    The version changes whenever a rule of the project or of the owner's project-less ones does (the
    per-scope versions only grow, so their sum does too). Plain SQL: it runs on every check, and building
    the ORM equivalents cost several times the query itself."""
    scopes = [f"owner:{owner_id}"] + ([f"project:{project_id}"] if project_id else [])
    params = {"scopes": scopes, "anti": KnowledgeType.ANTI_PRINCIPLE.value, "project": project_id,
              "owner": owner_id, "held": list(REVIEW_HELD)}
    with connection.cursor() as cursor:
        cursor.execute(_state_sql(), params)
        row = cursor.fetchone()
    return (int(row[0]), bool(row[1])) if row else (0, False)


def rule_set_version(*, owner_id: uuid.UUID, project_id: uuid.UUID | None) -> int:
    return scope_state(owner_id=owner_id, project_id=project_id)[0]


class _Cache:
    """Compiled rules per scope, rebuilt when the scope's rule-set version changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: dict[tuple[str, str], tuple[int, RuleIndex]] = {}

    def rules(self, owner_id: uuid.UUID, project_id: uuid.UUID | None, stamp: int | None = None) -> RuleIndex:
        """`stamp`: the scope's version when the caller already read it (before calling, never after)."""
        where = guard_scope_filter(owner_id=owner_id, project_id=project_id)
        # Read before the rows: a write in between leaves a newer version behind, so the next check rebuilds.
        stamp = rule_set_version(owner_id=owner_id, project_id=project_id) if stamp is None else stamp
        key = (str(owner_id), str(project_id))
        with self._lock:
            cached = self._rules.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        rows = GuardPattern.objects.filter(where).select_related("knowledge")
        compiled = [r for r in (_compile(row) for row in rows) if r is not None]
        index = RuleIndex(compiled)
        with self._lock:
            self._rules[key] = (stamp, index)
        return index


CACHE = _Cache()


def _describe(rule: Rule) -> str:
    text = f"{rule.text} (rule {rule.id}, {rule.kind} {rule.pattern!r})"
    return f"{text}; instead: {rule.alternative}" if rule.alternative else text


_LITERAL_HEAD = re.compile(r"^\^?([A-Za-z0-9_@-]+)")


def _regex_head(pattern: str) -> str:
    """The literal first word an anchored regex demands (`^danger\\b` -> danger), or "" when unsure."""
    match = _LITERAL_HEAD.match(pattern)
    if not pattern.startswith("^") or not match:
        return ""
    rest = pattern[match.end():]
    ends_word = rest == "" or rest.startswith((" ", "\\b", "\\s", "$"))
    return match.group(1) if ends_word and "|" not in pattern else ""


def _first_word(text: str) -> str:
    return text.split(" ", 1)[0] if text else ""


class RuleIndex:
    """Rules bucketed by what an action must contain for them to match (its first word, a path segment, a
    file name), so a check looks at a handful of candidates instead of every rule; the rest are scanned."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.by_word: dict[str, list[Rule]] = {}
        self.by_segment: dict[str, list[Rule]] = {}
        self.by_name: dict[str, list[Rule]] = {}
        self.exact: dict[str, list[Rule]] = {}
        self.scan: list[Rule] = []
        self.markers: list[Rule] = []
        for rule in rules:
            self._add(rule)
        # One pass over the text says whether any marker occurs at all (most actions carry none).
        self.marker_probe = re.compile("|".join(re.escape(r.pattern.lower()) for r in self.markers)) \
            if self.markers else None

    def _add(self, rule: Rule) -> None:
        if rule.kind == GuardKind.COMMAND_EXACT:
            self.exact.setdefault(" ".join(rule.pattern.split()), []).append(rule)
        elif rule.kind == GuardKind.GENERATED_MARKER:
            self.markers.append(rule)
        elif rule.kind == GuardKind.COMMAND_PREFIX:
            self.by_word.setdefault(_first_word(" ".join(rule.pattern.split())), []).append(rule)
        elif rule.kind == GuardKind.COMMAND_REGEX and (head := _regex_head(rule.pattern)):
            self.by_word.setdefault(head, []).append(rule)
        elif rule.glob is not None and "/" in rule.glob.normal \
                and not any(c in (head := rule.glob.normal.split("/", 1)[0]) for c in "*?["):
            self.by_segment.setdefault(head, []).append(rule)
        elif rule.kind == GuardKind.LOCK_FILE:
            self.by_name.setdefault(rule.pattern, []).append(rule)
        else:
            self.scan.append(rule)

    def candidates(self, parsed: ParsedAction) -> list[Rule]:
        found: list[Rule] = list(self.scan)
        found += self.by_word.get(_first_word(parsed.command), [])
        found += self.exact.get(parsed.command, [])
        if self.marker_probe is not None and self.marker_probe.search(parsed.text.lower()):
            found += self.markers
        for path in parsed.paths:
            parts = path.split("/")
            for segment in set(parts[:-1]):
                found += self.by_segment.get(segment, [])
            found += self.by_name.get(parts[-1], [])
        unique = {id(r): r for r in found}
        return sorted(unique.values(), key=lambda r: (r.severity != GuardSeverity.BLOCK, r.id))


def deterministic_verdict(rules: Sequence[Rule] | RuleIndex, parsed: ParsedAction) -> Verdict:
    verdict = Verdict()
    for rule in rules.candidates(parsed) if isinstance(rules, RuleIndex) else rules:
        if not _matches(rule, parsed):
            continue
        verdict.rule_ids.append(rule.id)
        if rule.severity == GuardSeverity.BLOCK:
            verdict.blockers.append(_describe(rule))
        else:
            verdict.warnings.append(_describe(rule))
    verdict.allowed = not verdict.blockers
    return verdict


_CALIBRATED: dict[str, tuple[float | None, float]] = {}  # embedding model -> (threshold, read at)
CALIBRATION_TTL_S = 60.0  # a calibration run in another process is picked up within a minute


def calibrated_threshold(model: str) -> float | None:
    """The newest `brain guard calibrate` result for `model` (GuardCalibration), cached per process."""
    cached = _CALIBRATED.get(model)
    if cached is not None and time.monotonic() - cached[1] < CALIBRATION_TTL_S:
        return cached[0]
    row = GuardCalibration.objects.filter(embedding_model=model).order_by("-created_at").first()
    value = row.threshold if row else None
    _CALIBRATED[model] = (value, time.monotonic())
    return value


def calibration_cache_clear() -> None:
    _CALIBRATED.clear()


def semantic_threshold(model: str | None = None) -> float:
    """BRAIN_GUARD_SEMANTIC_THRESHOLD when set, else the calibrated value of `model`, else the code default."""
    value = getattr(settings, "BRAIN_GUARD_SEMANTIC_THRESHOLD", None)
    if value is not None:
        return float(value)
    calibrated = calibrated_threshold(model) if model else None
    return SEMANTIC_THRESHOLD if calibrated is None else calibrated


@functools.cache
def _nearest_forbidden_sql() -> str:
    """The scope's three live forbidden actions nearest to a vector, written once (the ORM built it in 1.5 ms of a
    2.4 ms step, PostgreSQL ran it in 0.4; docs/benchmarks.md, twentieth pass). The scope is `scope_state`'s.

    Every forbidden action of the scope is ranked (`+ 0` keeps the planner off the HNSW index), read through the
    project and type indexes: 2.3 us each, so a scope holding a thousand pays 3-4 ms more a check. Ordered by the
    index, a large table's plan walked the whole table's graph for its 40 nearest rows and kept the forbidden ones
    among them, usually none: at 100,000 rules the check warned of nothing it warned of at 10 (docs/benchmarks.md,
    issue 17, thirty-second pass)."""
    items = KnowledgeItem._meta.db_table
    # The table name comes from the model; every value is a parameter.
    return (f"SELECT id, content, (embedding <=> %(vector)s::vector) + 0 AS distance FROM {items} "  # noqa: S608
            f"WHERE {_LIVE_FORBIDDEN} AND embedding_model = %(model)s "
            "AND (project_id = ANY(%(projects)s) OR (owner_id = %(owner)s AND project_id IS NULL)) "
            "ORDER BY distance LIMIT 3")


def semantic_warnings(*, owner_id: uuid.UUID, project_ids: Sequence[uuid.UUID], action: str,
                      skip: set[str]) -> list[tuple[str, str]]:
    """(id, warning) for stored forbidden actions close in meaning to `action`; empty when embeddings are off. The
    caller asks only for a scope that stores some (`scope_state`): embedding the action is most of a check's cost."""
    try:
        vector, model = embed_query(action)
    except EmbeddingUnavailable:
        return []
    params = {"vector": Vector(vector).to_text(), "anti": KnowledgeType.ANTI_PRINCIPLE.value, "held": list(REVIEW_HELD),
              "model": model, "projects": list(project_ids), "owner": owner_id}
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_nearest_forbidden", _nearest_forbidden_sql(), params)
        rows = cursor.fetchall()
    limit = 1.0 - semantic_threshold(model)
    return [(str(rid), f"Close to a stored forbidden action: {' '.join(content.split())} (knowledge {rid}, "
             f"similarity {1 - distance:.2f})") for rid, content, distance in rows
            if distance <= limit and str(rid) not in skip]


def guard_check(*, owner_id: uuid.UUID, project_id: uuid.UUID | None, action: str,
                semantic: bool = True) -> Verdict:
    parsed = parse_action(action)
    stamp, forbidden_stored = scope_state(owner_id=owner_id, project_id=project_id)  # one round trip for both
    verdict = deterministic_verdict(CACHE.rules(owner_id, project_id, stamp), parsed)
    if semantic and forbidden_stored:  # none stored: skip embedding the action (most of a check's cost)
        projects = [project_id] if project_id else []
        for rid, warning in semantic_warnings(owner_id=owner_id, project_ids=projects, action=parsed.text,
                                              skip=set(verdict.rule_ids)):
            verdict.rule_ids.append(rid)
            verdict.warnings.append(warning)
    return verdict
