"""Fixtures of the knowledge tests that more than one file uses."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection


@pytest.fixture
def distance_calls() -> Callable[[], int]:
    """A counter of this transaction's calls of the function behind pgvector's `<=>` for vectors."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL track_functions = 'all'")
        cursor.execute("SELECT oprcode::oid FROM pg_operator WHERE oprname = '<=>' "
                       "AND oprleft = 'vector'::regtype AND oprright = 'vector'::regtype")
        (function,) = cursor.fetchone()

    def calls() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(pg_stat_get_xact_function_calls(%s), 0)", [function])
            return int(cursor.fetchone()[0])

    return calls
