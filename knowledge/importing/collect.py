"""Which files of the paths given to `brain import` are imported: a file named on the command line always
(its format is detected, and an unknown one is reported); inside a folder only the files agents read rules
from (CLAUDE.md, AGENTS.md, GEMINI.md, .cursorrules, .windsurfrules, copilot-instructions.md, *.mdc), MCP
memory *.jsonl and our *.json exports, so a repository's README and docs are left alone."""

from __future__ import annotations

import os
from pathlib import Path

from knowledge.importing.formats import RULE_FILES
from knowledge.importing.ours import looks_like_export

SKIPPED_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "dist", "build"}


def _wanted(path: Path) -> bool:
    name = path.name.lower()
    if name in RULE_FILES or name.endswith((".mdc", ".jsonl")):
        return True
    if name.endswith(".json"):
        with path.open("rb") as handle:
            return looks_like_export(handle.read(200).decode("utf-8", "replace"))
    return False


def collect(paths: list[str]) -> tuple[list[Path], list[str]]:
    """(files to import in a stable order, paths that do not exist)."""
    found: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
                found.extend(p for p in (Path(root) / f for f in sorted(files)) if p.is_file() and _wanted(p))
        else:
            missing.append(raw)
    return list(dict.fromkeys(found)), missing
