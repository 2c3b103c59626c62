"""Which format a file is in, from its name first and its first bytes second; and the checks every file
passes before it is parsed (size, binary, UTF-8)."""

from __future__ import annotations

from pathlib import PurePosixPath

from knowledge.importing.markdown import parse_rules
from knowledge.importing.memory import parse_jsonl
from knowledge.importing.ours import looks_like_export, parse_export
from knowledge.importing.types import ImportRejected, ParsedRule

MAX_BYTES = 10 * 1024 * 1024  # a rule file is kilobytes; an export of a large brain fits well under this
# One request's files together (each is read whole before parsing), and the rules one file may hold: a 10 MB file
# of two-word lines is 2.5 million rules, gigabytes of parsed objects before anything is checked.
REQUEST_MAX_BYTES = 32 * 1024 * 1024
RULES_MAX = 50_000
# File names agents read their rules from -> the format tag their rules carry.
RULE_FILES = {
    "claude.md": "claude-md", "agents.md": "agents-md", "gemini.md": "gemini-md", ".cursorrules": "cursorrules",
    "copilot-instructions.md": "copilot", ".windsurfrules": "windsurf",
}
FORMATS = ("markdown", "mdc", "mcp-memory-jsonl", "brain-export-json")


def decode(name: str, data: bytes) -> str:
    """The file as text, or ImportRejected saying why not (too large, binary, not UTF-8)."""
    if len(data) > MAX_BYTES:
        raise ImportRejected(f"{len(data) / 1048576:.1f} MB is over the {MAX_BYTES // 1048576} MB limit per file")
    if b"\x00" in data[:8192]:
        raise ImportRejected("binary file (it holds NUL bytes); import Markdown, .mdc, JSONL or JSON text files")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportRejected(f"not valid UTF-8 (byte {exc.start}); save the file as UTF-8 and import it again") \
            from None


def detect(name: str, text: str) -> str:
    """One of FORMATS, or ImportRejected for a file that is none of them."""
    base = PurePosixPath(name.replace("\\", "/")).name.lower()
    if base.endswith(".mdc"):
        return "mdc"
    if base.endswith(".jsonl"):
        return "mcp-memory-jsonl"
    if base.endswith(".json"):
        if looks_like_export(text):
            return "brain-export-json"
        raise ImportRejected("a .json file that is not an External Brain export (its 'format' field is missing)")
    if base in RULE_FILES or base.endswith((".md", ".markdown")):
        return "markdown"
    if looks_like_export(text):
        return "brain-export-json"
    raise ImportRejected(f"unknown format for {base!r}: import CLAUDE.md, AGENTS.md, GEMINI.md, .cursorrules, "
                         ".windsurfrules, copilot-instructions.md, *.md, *.mdc, MCP memory *.jsonl or our "
                         "*.json export")


def source_tag(name: str, kind: str) -> str:
    base = PurePosixPath(name.replace("\\", "/")).name.lower()
    return RULE_FILES.get(base) or {"mdc": "cursor-rules", "mcp-memory-jsonl": "mcp-memory"}.get(kind, "")


def uploads_problem(sizes: list[int]) -> str | None:
    """Why a request's files are refused before any is read (None: they may be read)."""
    total = sum(sizes)
    if total > REQUEST_MAX_BYTES:
        return (f"{total / 1048576:.1f} MB of files in one request; at most {REQUEST_MAX_BYTES // 1048576} MB: "
                "send them in several requests")
    return None


def parse(name: str, data: bytes) -> tuple[str, list[ParsedRule]]:
    """(format, rules) of one file; ImportRejected with one clear message when it cannot be imported."""
    text = decode(name, data)
    kind = detect(name, text)
    if kind == "brain-export-json":
        rules = parse_export(text)
    elif kind == "mcp-memory-jsonl":
        rules = parse_jsonl(text)
    else:
        tag = source_tag(name, kind)
        rules = parse_rules(text, tags=(tag,) if tag else ())
    if len(rules) > RULES_MAX:
        raise ImportRejected(f"{len(rules)} rules in one file; at most {RULES_MAX}: split it into several files")
    return kind, rules
