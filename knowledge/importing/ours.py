"""Our own JSON export (`external-brain-export/1` or `/2`) read back as rules that restore every stored field.

Each knowledge row keeps, in `ParsedRule.restore`, what the import service writes back after creating it:
counters, confidence, decay, dates, deletion, its old id and project (by name) and what superseded it."""

from __future__ import annotations

import json
import math
from typing import Any

from django.utils.dateparse import parse_datetime

from knowledge.importing.types import ImportRejected, ParsedRule
from knowledge.models import (
    FILE_GLOB_MAX,
    FILE_GLOBS_MAX,
    SOURCE_MAX,
    TAG_MAX,
    TAGS_MAX,
    SkillStage,
)
from projects.models import STACK_NAME_MAX

FORMATS = ("external-brain-export/1", "external-brain-export/2")
_RESTORED = ("id", "projectId", "source", "stage", "confidence", "successCount", "failureCount", "decayScore",
             "framework", "language", "lastUsedAt", "createdAt", "deletedAt", "supersededById", "pinned")
_DATES = ("lastUsedAt", "createdAt", "deletedAt")
# The most characters each field may hold, checked before anything is written (a longer value failed at the
# database after the file's earlier rows were in): the columns' own limits, and for the texts a bound well above
# what the brain writes (a skill grows past RULE_MAX line by line) and below what its full-text index can hold.
RESTORED_TEXT_MAX = 200_000
_LONGEST = {"rule": RESTORED_TEXT_MAX, "trigger": RESTORED_TEXT_MAX, "rationale": RESTORED_TEXT_MAX,
            "source": SOURCE_MAX, "framework": STACK_NAME_MAX, "language": STACK_NAME_MAX}
_LISTS = {"tags": (TAGS_MAX, TAG_MAX), "fileGlobs": (FILE_GLOBS_MAX, FILE_GLOB_MAX)}


def looks_like_export(text: str) -> bool:
    head = text.lstrip()[:200]
    return head.startswith("{") and '"format"' in head and "external-brain-export/" in head


def _problem(key: str, value: Any) -> str | None:
    """What a restored field's value must be, when it is not (None: it fits). Checked before anything is written:
    a value the write-back could not store failed after the file's earlier rows were in."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key in ("confidence", "decayScore"):
        if not number or not math.isfinite(value):
            return "must be a finite number"
        return "must be between 0 and 1" if key == "confidence" and not 0 <= value <= 1 else None
    if key in ("successCount", "failureCount"):
        return None if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else "must be a count"
    if key == "pinned":
        return None if isinstance(value, bool) else "must be true or false"
    if value is not None and not isinstance(value, str):
        return "must be a string"
    if key in _DATES and value and not _is_datetime(value):
        return "must be an ISO date-time"
    if key == "stage" and (value or "") not in SkillStage.values:
        return f"must be one of {', '.join(repr(v) for v in SkillStage.values)}"
    return None


def _limits_problem(row: dict[str, Any], index: int) -> str | None:
    for key, longest in _LONGEST.items():
        if isinstance(row.get(key), str) and len(row[key]) > longest:
            return f"knowledge[{index}].{key} is {len(row[key])} characters; at most {longest}"
    for key, (most, longest) in _LISTS.items():
        items = row.get(key) or []
        if not isinstance(items, list):
            return f"knowledge[{index}].{key} must be a list"
        if len(items) > most or any(len(str(item)) > longest for item in items):
            return f"knowledge[{index}].{key}: at most {most}, each at most {longest} characters"
    return None


def _is_datetime(text: str) -> bool:
    try:
        return parse_datetime(text) is not None
    except ValueError:  # the shape of one, but not a real date ("2024-13-45T00:00:00")
        return False


def _restored(row: dict[str, Any], index: int) -> dict[str, Any]:
    restore = {key: row[key] for key in _RESTORED if key in row}
    for key, value in restore.items():
        if problem := _problem(key, value):
            raise ImportRejected(f"knowledge[{index}].{key} {problem}; got {str(value)[:60]!r}")
    if problem := _limits_problem(row, index):
        raise ImportRejected(problem)
    return restore


def _row(row: Any, index: int, projects: dict[str, str]) -> ParsedRule:
    if not isinstance(row, dict) or not isinstance(row.get("rule"), str) or not isinstance(row.get("type"), str):
        raise ImportRejected(f"knowledge[{index}] needs at least the strings 'type' and 'rule'")
    restore = _restored(row, index)
    restore["projectName"] = projects.get(str(row.get("projectId")), "") if row.get("projectId") else ""
    return ParsedRule(
        content=row["rule"], type=row["type"], trigger=str(row.get("trigger") or ""),
        rationale=str(row.get("rationale") or ""), tags=tuple(str(t) for t in row.get("tags") or ()),
        file_globs=tuple(str(g) for g in row.get("fileGlobs") or ()), always_apply=bool(row.get("alwaysApply")),
        line=0, restore=restore,
    )


def parse_export(text: str) -> list[ParsedRule]:
    """The knowledge rows of an export, oldest first as written; sessions and tokens are not imported."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ImportRejected(f"not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") not in FORMATS:
        raise ImportRejected(f"not an External Brain export: 'format' must be one of {', '.join(FORMATS)}")
    if not isinstance(document.get("projects") or [], list):
        raise ImportRejected("'projects' must be a list")
    projects = {str(p.get("id")): str(p.get("name") or "") for p in document.get("projects") or []
                if isinstance(p, dict)}
    rows = document.get("knowledge") or []
    if not isinstance(rows, list):
        raise ImportRejected("'knowledge' must be a list")
    return [_row(row, i, projects) for i, row in enumerate(rows)]
