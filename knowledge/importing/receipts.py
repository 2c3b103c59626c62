"""What an import reports: one receipt per rule, one per file, and the totals of the run."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

CREATED, MERGED, SKIPPED = "created", "merged", "skipped"
EXCERPT = 120


@dataclass(frozen=True)
class RuleReceipt:
    status: str  # created | merged | skipped
    type: str
    rule: str  # the first characters of the rule, to recognise it
    line: int = 0
    id: uuid.UUID | None = None  # the row created, or the row it was merged into / is a copy of
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "type": self.type, "rule": self.rule, "line": self.line,
                               "id": str(self.id) if self.id else None}
        if self.status == MERGED:
            out["mergedInto"] = str(self.id)
        if self.reason:
            out["reason"] = self.reason
        return out


def excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[:EXCERPT - 1] + "…"


@dataclass
class FileReceipt:
    name: str
    format: str = ""
    error: str = ""  # set when the whole file failed (then nothing of it was stored)
    rules: list[RuleReceipt] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rules if r.status == status)

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.name, "format": self.format or None, "status": "failed" if self.error else "imported",
                "error": self.error or None, "created": self.count(CREATED), "merged": self.count(MERGED),
                "skipped": self.count(SKIPPED), "rules": [r.as_dict() for r in self.rules]}


@dataclass
class ImportReport:
    dry_run: bool = False
    project: str | None = None  # the target project's name (None: the rows' own projects / personal)
    files: list[FileReceipt] = field(default_factory=list)

    def total(self, status: str) -> int:
        return sum(f.count(status) for f in self.files if not f.error)

    @property
    def failed(self) -> int:
        return sum(1 for f in self.files if f.error)

    def as_dict(self) -> dict[str, Any]:
        return {"created": self.total(CREATED), "merged": self.total(MERGED), "skipped": self.total(SKIPPED),
                "failed": self.failed, "dryRun": self.dry_run, "project": self.project,
                "files": [f.as_dict() for f in self.files]}
