"""The front matter of a Cursor `.mdc` rule file: `description`, `globs`, `alwaysApply`.

Cursor writes `globs: **/*.ts` unquoted, which YAML reads as an alias and rejects, so this is a small
line reader for the three keys Cursor uses rather than a YAML parser. Unknown keys are kept as strings."""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.importing.types import ImportRejected

_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_ITEM = re.compile(r"^\s+-\s*(.*)$|^-\s+(.*)$")


@dataclass(frozen=True)
class FrontMatter:
    description: str = ""
    globs: tuple[str, ...] = ()
    always_apply: bool = False


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _globs(value: str) -> list[str]:
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return [g for g in (_unquote(part) for part in value.split(",")) if g]


def _bool(value: str) -> bool:
    word = _unquote(value).lower()
    if word in {"true", "yes", "on"}:
        return True
    if word in {"false", "no", "off", ""}:
        return False
    raise ImportRejected(f"front matter: alwaysApply must be true or false, not {value.strip()!r}")


def _pairs(lines: list[str]) -> dict[str, list[str]]:
    """key -> [inline value, list items...]; a line that is neither `key: value` nor a list item is broken."""
    found: dict[str, list[str]] = {}
    key = ""
    for number, line in enumerate(lines, start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM.match(line)
        if item and key:
            found[key].append(_unquote(item.group(1) or item.group(2) or ""))
            continue
        pair = _KEY.match(line)
        if pair is None:
            raise ImportRejected(f"front matter line {number} is not `key: value`: {line.strip()[:80]!r}")
        key = pair.group(1)
        found[key] = [pair.group(2)]
    return found


def split_front_matter(text: str) -> tuple[FrontMatter, str, int]:
    """(front matter, body, number of lines before the body). A file that opens `---` must close it."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return FrontMatter(), text, 0
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ImportRejected("front matter opened with `---` on line 1 is never closed by a `---` line") from None
    pairs = _pairs(lines[1:end])
    globs: list[str] = []
    if "globs" in pairs:
        first, *items = pairs["globs"]
        globs = _globs(first) + [g for g in items if g]
    meta = FrontMatter(description=_unquote(pairs.get("description", [""])[0]), globs=tuple(dict.fromkeys(globs)),
                       always_apply=_bool(pairs.get("alwaysApply", [""])[0]))
    return meta, "\n".join(lines[end + 1:]), end + 1
