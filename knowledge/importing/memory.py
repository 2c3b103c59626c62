"""The official MCP memory server's JSONL: one entity or relation a line.

`{"type":"entity","name":"Alice","entityType":"person","observations":["prefers tabs"]}` gives one rule
per observation (trigger: the entity, tags: its type); `{"type":"relation","from":"A","to":"B",
"relationType":"works_at"}` gives the rule "A works_at B". Every line must be one of the two."""

from __future__ import annotations

import json
from typing import Any

from knowledge.importing.markdown import rule_type, slug
from knowledge.importing.types import ImportRejected, ParsedRule

TAG = "mcp-memory"


def _text(record: dict[str, Any], key: str, number: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ImportRejected(f"line {number}: a {record.get('type')} needs a non-empty string {key!r}")
    return value.strip()


def _entity(record: dict[str, Any], number: int) -> list[ParsedRule]:
    name = _text(record, "name", number)
    kind = record.get("entityType")
    observations = record.get("observations") or []
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        raise ImportRejected(f"line {number}: observations of entity {name!r} must be a list of strings")
    tags = tuple(t for t in (TAG, slug(kind) if isinstance(kind, str) else "") if t)
    return [ParsedRule(content=o.strip(), type=rule_type(o), trigger=name, tags=tags, line=number)
            for o in observations if o.strip()]


def _relation(record: dict[str, Any], number: int) -> ParsedRule:
    source, target = _text(record, "from", number), _text(record, "to", number)
    verb = _text(record, "relationType", number)
    return ParsedRule(content=f"{source} {verb} {target}", type="heuristic", trigger=source,
                      tags=(TAG, "relation"), line=number)


def parse_jsonl(text: str) -> list[ParsedRule]:
    """Every rule of the file, or ImportRejected naming the first bad line (then nothing is imported)."""
    rules: list[ParsedRule] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ImportRejected(f"line {number} is not JSON: {exc}") from None
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "entity":
            rules.extend(_entity(record, number))
        elif kind == "relation":
            rules.append(_relation(record, number))
        else:
            raise ImportRejected(f"line {number}: expected an object with type 'entity' or 'relation'")
    return rules
