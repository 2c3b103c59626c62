"""One page of a list, for pages that show "older" without counting everything, and the page number they read."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest

PAGE_MAX = 10_000  # a page number past this is a crafted URL; PostgreSQL's OFFSET would overflow its bigint


def page_slice(rows: QuerySet[Any], page: int, size: int) -> tuple[list[Any], bool]:
    """Page `page` (1 first; lower counts as 1) of the ordered `rows`, `size` at most, and whether a later page has
    any: one row more is read instead of a count."""
    start = (max(page, 1) - 1) * size
    found = list(rows[start:start + size + 1])
    return found[:size], len(found) > size


def page_number(request: HttpRequest, name: str = "page") -> int:
    """The page asked for in the query string, 1 to PAGE_MAX. Garbage (`abc`, `1.5`, empty) means the first page
    and a number out of range is brought into it: a hand-edited link still answers a page, never an error."""
    try:
        return min(max(int(request.GET.get(name, 1)), 1), PAGE_MAX)
    except ValueError:
        return 1


def on_same_page(url: str, request: HttpRequest) -> str:
    """`url` showing the page the request came from (an action posted from page 3 of a list lands back on page 3)."""
    page = page_number(request)
    return f"{url}?page={page}" if page > 1 else url
