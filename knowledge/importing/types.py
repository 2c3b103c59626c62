"""What a parser hands the import service: one rule, with where it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ImportRejected(ValueError):
    """A whole file cannot be imported (its message is the receipt's error); nothing of it is stored."""


@dataclass(frozen=True)
class ParsedRule:
    content: str
    type: str = "heuristic"
    trigger: str = ""
    rationale: str = ""
    tags: tuple[str, ...] = ()
    file_globs: tuple[str, ...] = ()
    always_apply: bool = False
    line: int = 0  # 1-based line of the rule in its file (0 when the format has no lines)
    # Our own export only: the row's other stored fields (counters, dates, ids), restored as they were.
    restore: dict[str, Any] = field(default_factory=dict)
