"""Cursor (keyset) pagination: stable under inserts, no OFFSET scans, opaque to clients.

A cursor encodes the sort-key values of the last row served; the next page is every row strictly
after it in the queryset's order. The queryset stays scoped in SQL by its selector.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, transaction
from django.db.models import Model, Q, QuerySet
from ninja import Schema
from pydantic import Field

from brain.errors import ValidationFailed

M = TypeVar("M", bound=Model)
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# A list's `limit` query parameter: out of range is refused (VALIDATION naming it), not quietly bent into range.
PageLimit = Annotated[int | None, Field(ge=1, le=MAX_LIMIT, description=f"rows per page, 1-{MAX_LIMIT} "
                                        f"(default {DEFAULT_LIMIT})")]


@dataclass(frozen=True)
class Page(Generic[M]):
    items: list[M]
    next_cursor: str | None


class PageMeta(Schema):
    nextCursor: str | None  # noqa: N815 - the wire format is camelCase like the MCP tools


def _encode(values: Sequence[Any]) -> str:
    plain = [v.isoformat() if isinstance(v, datetime) else str(v) if not isinstance(v, int) else v for v in values]
    return base64.urlsafe_b64encode(json.dumps(plain).encode()).decode().rstrip("=")


def _decode(cursor: str, size: int) -> list[Any]:
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):  # deep nesting: not ours either
        values = None
    if not isinstance(values, list) or len(values) != size or not all(isinstance(v, str | int) for v in values):
        raise ValidationFailed("cursor is not one this API issued; start again without it")
    return values


def _after(keys: Sequence[str], values: Sequence[Any]) -> Q:
    """Rows after `values` in the order `keys` ("-field" = descending): a lexicographic comparison."""
    condition = Q(pk__in=[])
    for i, key in enumerate(keys):
        field, desc = key.lstrip("-"), key.startswith("-")
        step = Q(**{f"{field}__{'lt' if desc else 'gt'}": values[i]})
        for prev_key, prev_value in zip(keys[:i], values[:i], strict=True):
            step &= Q(**{prev_key.lstrip("-"): prev_value})
        condition |= step
    return condition


def paginate(qs: QuerySet[M], *, keys: Sequence[str], cursor: str | None, limit: int | None) -> Page[M]:
    """One page of `qs` ordered by `keys` (which must end with a unique field, e.g. "id")."""
    size = min(max(limit or DEFAULT_LIMIT, 1), MAX_LIMIT)
    qs = qs.order_by(*keys)
    if cursor:
        values = _decode(cursor, len(keys))
        try:
            with transaction.atomic():  # a forged value may fail in SQL; keep the connection usable
                rows = list(qs.filter(_after(keys, values))[: size + 1])
        except (DjangoValidationError, ValueError, TypeError, DataError):
            raise ValidationFailed("cursor is not one this API issued; start again without it") from None
    else:
        rows = list(qs[: size + 1])
    items = rows[:size]
    next_cursor = None
    if len(rows) > size:
        next_cursor = _encode([getattr(items[-1], key.lstrip("-")) for key in keys])
    return Page(items=items, next_cursor=next_cursor)
