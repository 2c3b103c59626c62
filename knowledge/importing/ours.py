"""Our own JSON export (`external-brain-export/1` or `/2`) read back as rules that restore every stored field.

Each knowledge row keeps, in `ParsedRule.restore`, what the import service writes back after creating it:
counters, confidence, decay, dates, deletion, its old id and project (by name) and what superseded it."""

from __future__ import annotations

import json
from typing import Any

from knowledge.importing.types import ImportRejected, ParsedRule

FORMATS = ("external-brain-export/1", "external-brain-export/2")
_RESTORED = ("id", "projectId", "source", "stage", "confidence", "successCount", "failureCount", "decayScore",
             "framework", "language", "lastUsedAt", "createdAt", "deletedAt", "supersededById", "pinned")


def looks_like_export(text: str) -> bool:
    head = text.lstrip()[:200]
    return head.startswith("{") and '"format"' in head and "external-brain-export/" in head


def _row(row: Any, index: int, projects: dict[str, str]) -> ParsedRule:
    if not isinstance(row, dict) or not isinstance(row.get("rule"), str) or not isinstance(row.get("type"), str):
        raise ImportRejected(f"knowledge[{index}] needs at least the strings 'type' and 'rule'")
    restore = {key: row[key] for key in _RESTORED if key in row}
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
    except ValueError as exc:
        raise ImportRejected(f"not valid JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") not in FORMATS:
        raise ImportRejected(f"not an External Brain export: 'format' must be one of {', '.join(FORMATS)}")
    projects = {str(p.get("id")): str(p.get("name") or "") for p in document.get("projects") or []
                if isinstance(p, dict)}
    rows = document.get("knowledge") or []
    if not isinstance(rows, list):
        raise ImportRejected("'knowledge' must be a list")
    return [_row(row, i, projects) for i, row in enumerate(rows)]
