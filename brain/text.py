"""The one rule for text that reaches PostgreSQL: no NUL characters and no unpaired UTF-16 surrogates.

PostgreSQL `text` and `jsonb` cannot hold U+0000, and psycopg cannot encode a lone surrogate (`\\ud800`,
which JSON allows and Python keeps) as UTF-8. Either one used to surface as a database error, i.e. a 500,
after part of a request may already have been written. Services and selectors call `text_storable` on
every text they store or send to SQL, before their first write, so every interface (MCP, REST,
dashboard, CLI, jobs) refuses the same input with the same VALIDATION error naming the field.

    text_storable(rule=rule, trigger=trigger, tags=tags)   # raises ValidationFailed, or returns None

A number inside a stored value must be finite: Python's JSON reader takes `NaN` and `1e999` (infinity), which a
`jsonb` column refuses, so a payload holding one failed the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from brain.errors import ValidationFailed

NUL = "\x00"


def _problem(text: str) -> str | None:
    if NUL in text:
        return "must not contain NUL (\\u0000) characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode: it holds an unpaired surrogate (\\ud800-\\udfff)"
    return None


NESTING_MAX = 32  # levels of dicts and lists in one value: a payload is a record, not a tree of any depth


def text_problem(value: Any, path: str, depth: int = 0) -> tuple[str, str] | None:
    """The first (where, problem) in `value`, walking dicts (keys and values), lists and tuples; None if
    every string in it is storable and every float finite. Other values (ints, dates, None) are never a problem.
    A value nested past NESTING_MAX levels is one (walking it further ran out of stack: an internal error)."""
    if depth > NESTING_MAX and isinstance(value, Mapping | list | tuple):
        return path, f"is nested more than {NESTING_MAX} levels deep; send a flatter value"
    if isinstance(value, str):
        problem = _problem(value)
        return (path, problem) if problem else None
    if isinstance(value, float) and not math.isfinite(value):
        return path, "must be a finite number (JSON has no NaN or Infinity)"
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and (problem := _problem(key)):
                return f"a key of {path}", problem
            if found := text_problem(item, f"{path}.{key}", depth + 1):
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if found := text_problem(item, f"{path}[{index}]", depth + 1):
                return found
    return None


def text_storable(**fields: Any) -> None:
    """Raises ValidationFailed naming the first field (a dotted path inside nested values) whose text
    PostgreSQL cannot store; `details.field` carries the same path."""
    for name, value in fields.items():
        found = text_problem(value, name)
        if found is not None:
            where, problem = found
            raise ValidationFailed(f"{where} {problem}", details={"field": where})
