"""Markdown rule files (CLAUDE.md, AGENTS.md, .cursorrules, .mdc, ...) split into rules.

Headings give the trigger (their path, `A > B`) and tags (their slugs); an `.mdc` description is the
rationale of rules that have none of their own; each bullet is one rule and so
is each prose paragraph; a bullet that only introduces nested bullets (ends with `:`) becomes part of
their trigger instead. Indented lines continue their bullet, `> ...` lines under a rule are its rationale,
and a code fence stays with the rule before it. "never / don't / avoid" make an anti-principle,
"always / must" a principle, anything else a heuristic. A `<!-- brain {...} -->` comment (written by our
Markdown export) before a bullet carries the rule's type, trigger and tags, so an export re-imports as
the same rules."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from knowledge.importing.frontmatter import split_front_matter
from knowledge.importing.types import ParsedRule

# The title's closing #s are cut in Python: as `(.*?)\s*#*\s*$` the regex backtracked cubically on a long run of
# blanks ("# a", 2,000 spaces, "b" took 14 s).
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_RULE_LINE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_META = re.compile(r"^\s*<!--\s*brain\s+(\{.*\})\s*-->\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_ANTI = re.compile(r"\b(never|don[\u2019']?t|do not|avoid|must not|mustn[\u2019']?t)\b", re.IGNORECASE)
_PRO = re.compile(r"\b(always|must)\b", re.IGNORECASE)
_SLUG = re.compile(r"[^a-z0-9]+")
TAG_SLUG_MAX = 40
TRIGGER_LIMIT = 1000


def rule_type(text: str) -> str:
    """anti_principle for never/don't/avoid, principle for always/must, else heuristic (code is not read)."""
    prose = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    if _ANTI.search(prose):
        return "anti_principle"
    return "principle" if _PRO.search(prose) else "heuristic"


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:TAG_SLUG_MAX].strip("-")


@dataclass
class _Item:
    line: int
    kind: str  # bullet | para | code
    indent: int = 0
    lines: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    context: tuple[str, ...] = ()
    meta: dict[str, Any] | None = None
    fenced: bool = False


class _Reader:
    def __init__(self, first_line: int) -> None:
        self.offset = first_line
        self.headings: list[tuple[int, str]] = []
        self.leads: list[tuple[int, str]] = []  # lead-in bullets (indent, text) above the current one
        self.items: list[tuple[_Item, tuple[str, ...]]] = []
        self.current: _Item | None = None
        self.fence: str | None = None
        self.fence_indent = 0
        self.meta: dict[str, Any] | None = None
        self.blank = False

    def flush(self) -> None:
        if self.current is not None:
            self.items.append((self.current, tuple(h for _, h in self.headings)))
        self.current = None
        self.blank = False

    def start(self, number: int, kind: str, text: str, indent: int = 0) -> None:
        self.flush()
        item = _Item(line=number, kind=kind, indent=indent, lines=[text] if text else [], meta=self.meta)
        self.meta = None
        if kind == "bullet":
            self._nest(item)
        self.current = item

    def _nest(self, item: _Item) -> None:
        previous = self.items[-1][0] if self.items else None
        if (previous is not None and previous.kind == "bullet" and previous.indent < item.indent
                and len(previous.lines) == 1 and previous.lines[0].endswith(":") and not previous.fenced
                and previous.meta is None):
            self.items.pop()
            self.leads.append((previous.indent, previous.lines[0].rstrip(":").strip()))
        while self.leads and self.leads[-1][0] >= item.indent:
            self.leads.pop()
        item.context = tuple(text for _, text in self.leads)

    def line(self, number: int, raw: str) -> None:
        if self.fence is not None:
            self._in_fence(raw)
        elif self.current is not None and self.current.meta is not None and self.current.kind == "bullet" \
                and (not raw.strip() or raw.startswith("  ")):
            self.current.lines.append(raw[2:])  # an exported rule's continuation, kept verbatim
        else:
            self._outside(number, raw)

    def _in_fence(self, raw: str) -> None:
        assert self.current is not None
        stripped = raw[self.fence_indent:] if raw[:self.fence_indent].isspace() else raw.lstrip()
        self.current.lines.append(stripped)
        if stripped.strip().startswith(self.fence or "```") and stripped.strip().strip("`~") == "":
            self.fence = None

    def _outside(self, number: int, raw: str) -> None:
        if not raw.strip():
            if self.current is not None and self.current.kind == "para":
                self.flush()
            self.blank = True
            return
        if (fence := _FENCE.match(raw)) is not None:
            self._open_fence(number, raw, fence.group(1))
        elif (meta := _META.match(raw)) is not None:
            self.flush()
            self.meta = _meta(meta.group(1))
        elif _COMMENT.match(raw) or _RULE_LINE.match(raw):
            self.flush()
        elif (heading := _HEADING.match(raw)) is not None:
            self._heading(len(heading.group(1)), heading.group(2).rstrip().rstrip("#").rstrip())
        elif (bullet := _BULLET.match(raw)) is not None:
            self.start(number, "bullet", bullet.group(2).strip(), len(bullet.group(1).expandtabs(4)))
        elif (quote := _QUOTE.match(raw)) is not None and self.current is not None:
            self.current.why.append(quote.group(1).strip())
        elif self.current is not None and (not self.blank or raw[:1].isspace()):
            self.current.lines.append(raw.strip())
        else:
            self.start(number, "para", raw.strip())
        if self.current is not None:
            self.blank = False

    def _open_fence(self, number: int, raw: str, marker: str) -> None:
        if self.current is None:
            self.start(number, "code", "")
        assert self.current is not None
        self.fence, self.fence_indent = marker, len(raw) - len(raw.lstrip())
        self.current.lines.append(raw[self.fence_indent:])
        self.current.fenced = True

    def _heading(self, level: int, text: str) -> None:
        self.flush()
        self.leads = []
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, text.strip()))


def _meta(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _rule(item: _Item, headings: tuple[str, ...], description: str, base_tags: tuple[str, ...],
          globs: tuple[str, ...], always: bool) -> ParsedRule:
    content = "\n".join(item.lines).strip()
    why = " ".join(w for w in item.why if w)
    why = re.sub(r"^\s*why\s*:\s*", "", why, flags=re.IGNORECASE)
    if item.meta is not None:
        meta = item.meta
        return ParsedRule(content=content, type=str(meta.get("type") or rule_type(content)),
                          trigger=str(meta.get("trigger") or ""), rationale=str(meta.get("rationale") or why),
                          tags=tuple(str(t) for t in meta.get("tags") or ()), line=item.line,
                          file_globs=tuple(str(g) for g in meta.get("fileGlobs") or globs),
                          always_apply=bool(meta.get("alwaysApply", always)))
    # The file's description is not part of the trigger: shared by every rule of the file, it would make them
    # all near-duplicates of each other (the trigger is embedded with the rule). It is kept as the rationale.
    path = [p for p in (*headings, *item.context) if p]
    tags = tuple(dict.fromkeys(t for t in (*base_tags, *(slug(h) for h in headings)) if t))
    return ParsedRule(content=content, type=rule_type(content), trigger=" > ".join(path)[:TRIGGER_LIMIT],
                      rationale=why or description, tags=tags, file_globs=globs, always_apply=always, line=item.line)


def parse_rules(text: str, *, tags: tuple[str, ...] = ()) -> list[ParsedRule]:
    """The rules of one Markdown rule file (front matter included); raises ImportRejected on broken front matter."""
    front, body, skipped = split_front_matter(text)
    reader = _Reader(skipped)
    for number, raw in enumerate(body.split("\n"), start=skipped + 1):
        reader.line(number, raw.rstrip("\r"))
    reader.flush()
    rules = [_rule(item, headings, front.description, tags, front.globs, front.always_apply)
             for item, headings in reader.items]
    return [rule for rule in rules if rule.content]
