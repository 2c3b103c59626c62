"""Model instances from hand-written SQL on the hot path, built the way the ORM builds them (`Model.from_db`).

A few per-call reads (the tools/call authentication, the project list) are one fixed statement each, written
once per process from the models' metadata: Django would otherwise rebuild and recompile the same query on
every call, which cost as much as the round trip itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Model

Aliased = Sequence[tuple[str, type[Model]]]


def select_list(aliases: Aliased) -> str:
    """Every concrete column of each aliased model, in field order: `a."col", ..., b."col"`."""
    return ", ".join(f'{alias}."{field.column}"' for alias, model in aliases for field in model._meta.concrete_fields)


def instances(row: Sequence[Any], aliases: Aliased) -> dict[str, Model | None]:
    """One instance per alias from a row laid out by `select_list`; None where an outer join found no row."""
    built: dict[str, Model | None] = {}
    start = 0
    for alias, model in aliases:
        fields = model._meta.concrete_fields
        values = row[start:start + len(fields)]
        start += len(fields)
        built[alias] = None if values[0] is None else model.from_db(
            connection.alias, [f.attname for f in fields], values)
    return built
