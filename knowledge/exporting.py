"""Knowledge as Markdown a team can commit (AGENTS.md, CLAUDE.md) and as Cursor `.mdc` rule files.

Output is deterministic: groups in a fixed type order, rows by trigger, rule and id, no timestamps, so
two exports of an unchanged brain are byte-identical and a changed one diffs by the rows that changed.
Each rule is a bullet preceded by a `<!-- brain {...} -->` comment carrying its provenance (id, source,
confidence) and the fields Markdown cannot show (type, trigger, tags, rationale, globs); our importer reads
it back, so an export re-imports as the same rules. Continuation lines are indented by two spaces."""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

from knowledge.importing.markdown import slug
from knowledge.models import KnowledgeItem, KnowledgeType

# Group order and titles: unconditional kinds first, as an agent reads them.
TYPE_ORDER = [t for t in KnowledgeType.values if t != KnowledgeType.ACTION_ITEM]
TITLES = {"rule": "Rules", "principle": "Principles", "anti_principle": "Anti-principles (never do this)",
          "reflex": "Reflexes", "recipe": "Recipes", "heuristic": "Heuristics", "decision": "Decisions",
          "skill": "Skills"}
MARKDOWN_FILES = {"agents-md": "AGENTS.md", "claude-md": "CLAUDE.md"}


def _comment(row: KnowledgeItem) -> str:
    meta: dict[str, Any] = {"id": str(row.id), "type": row.type, "trigger": row.trigger, "tags": list(row.tags),
                            "source": row.source, "confidence": round(row.confidence, 3)}
    if row.rationale:
        meta["rationale"] = row.rationale
    if row.file_globs:
        meta["fileGlobs"] = list(row.file_globs)
    if row.always_apply:
        meta["alwaysApply"] = True
    # `>` only occurs inside JSON strings, so escaping it keeps `-->` out of the comment.
    return "<!-- brain " + json.dumps(meta, ensure_ascii=False).replace(">", "\\u003e") + " -->"


def rule_block(row: KnowledgeItem) -> str:
    first, *rest = row.content.strip().split("\n")
    lines = [_comment(row), f"- {first}", *(f"  {line}" if line.strip() else "" for line in rest)]
    return "\n".join(lines) + "\n\n"


def markdown_document(rows: Iterable[KnowledgeItem], *, title: str, scope: str) -> Iterator[str]:
    """The rows (already in TYPE_ORDER, trigger, rule, id order) as one Markdown file, streamed."""
    yield f"# {title}\n\n<!-- exported by External Brain from {scope}; edit freely, re-import with `brain import` -->\n"
    current = None
    for row in rows:
        if row.type != current:
            current = row.type
            yield f"\n## {TITLES.get(row.type, row.type)}\n\n"
        yield rule_block(row)


def group_key(row: KnowledgeItem) -> tuple[str, tuple[str, ...], bool]:
    return row.type, tuple(row.file_globs), row.always_apply


def mdc_name(key: tuple[str, tuple[str, ...], bool]) -> str:
    kind, globs, always = key
    name = f"brain-{kind.replace('_', '-')}"
    if globs:
        digest = hashlib.sha256("\n".join(globs).encode()).hexdigest()[:6]
        name += f"-{slug(' '.join(globs))[:30]}-{digest}"
    return name + ("-always" if always else "") + ".mdc"


def mdc_document(key: tuple[str, tuple[str, ...], bool], rows: list[KnowledgeItem]) -> str:
    kind, globs, always = key
    front = ["---", f"description: External Brain {TITLES.get(kind, kind).lower()} ({len(rows)})",
             f"globs: {', '.join(globs)}", f"alwaysApply: {'true' if always else 'false'}", "---", ""]
    return "\n".join(front) + "".join(rule_block(row) for row in rows)


def cursor_rules_zip(files: Iterable[tuple[str, str]]) -> IO[bytes]:
    """The .mdc files as a zip under `.cursor/rules/`, in a spooled temp file rewound for reading."""
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115 - handed to the response
    with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files:
            info = zipfile.ZipInfo(f".cursor/rules/{name}", date_time=(1980, 1, 1, 0, 0, 0))  # stable bytes
            archive.writestr(info, text, compress_type=zipfile.ZIP_DEFLATED)
    spool.seek(0)
    return spool  # type: ignore[return-value]
