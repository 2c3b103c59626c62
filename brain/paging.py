"""One page of a list, for pages that show "older" without counting everything."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet


def page_slice(rows: QuerySet[Any], page: int, size: int) -> tuple[list[Any], bool]:
    """Page `page` (1 first; lower counts as 1) of the ordered `rows`, `size` at most, and whether a later page has
    any: one row more is read instead of a count."""
    start = (max(page, 1) - 1) * size
    found = list(rows[start:start + size + 1])
    return found[:size], len(found) > size
