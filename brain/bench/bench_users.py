"""The user an in-database bench (`bench tools`, `bench retrieval-scale`, `bench cognibrain`) loads its rows under, on
the brain's own database, and their removal.

A run removes its user and everything it owns when it ends. A run killed before that (SIGKILL, a database restart
under it) left them behind: 100,000 knowledge rows of another owner that every later search of the table walked past
(an open took twice as long on such a table; docs/benchmarks.md, twenty-first pass). So a run first removes what
earlier runs of the same bench left. It knows they are dead because each run holds an advisory lock, which
PostgreSQL releases with the run's connection: a second run while one is live is refused instead.

The removal leaves its rows dead in the tables, and the next run's index drops cancel autovacuum's work on them, so
runs back to back grew the knowledge table to 5 GB of dead rows that the bench's page-cache check then found too large
to hold (docs/benchmarks.md, issue 17, twenty-seventh pass). A removal is therefore followed by a VACUUM of the tables
it deleted from (`users_remove`).
"""

from __future__ import annotations

import sys
import time
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DOMAIN = "bench.invalid"  # a reserved name: no real account has an address there


class BenchBusy(SystemExit):
    """Another run of the same bench is using this database."""


def _lock_key(kind: str) -> int:
    return zlib.crc32(f"brain-bench-{kind}".encode())


def bench_user_remove(user_id: Any) -> int:
    """Removes a bench user with everything it owns; returns how many knowledge rows went. Bulk statements first:
    the ORM's cascade would walk 100,000 rows one by one."""
    from django.db import connection

    from knowledge.guard_models import GuardPattern
    from knowledge.models import KnowledgeItem
    from projects.models import User
    from sessions.models import Session

    Session.objects.filter(user_id=user_id).delete()  # events and applications first
    items, patterns = KnowledgeItem._meta.db_table, GuardPattern._meta.db_table
    with connection.cursor() as cursor:  # table names from the models; the owner is a parameter
        cursor.execute(f'DELETE FROM "{patterns}" WHERE knowledge_id IN '
                       f'(SELECT id FROM "{items}" WHERE owner_id = %s)', [user_id])
        cursor.execute(f'DELETE FROM "{items}" WHERE owner_id = %s', [user_id])
        removed = cursor.rowcount
    User.objects.filter(id=user_id).delete()
    return int(removed)


def users_remove(kind: str, user_ids: list[Any]) -> int:
    """Removes bench users with everything they own (`bench_user_remove`); returns the knowledge rows removed.

    Outside a transaction the tables are then vacuumed, with the knowledge table's HNSW graph dropped first and built
    again last. Vacuuming a graph that lost most of its rows repairs every live row's neighbours: 542 s after a run of
    200,000 rows left 8,000 behind, against 13 s for the delete, the vacuum and the 8,000 rows' graph built again
    (docs/benchmarks.md, issue 17, twenty-seventh pass). Inside a transaction (a caller's own), where PostgreSQL
    refuses VACUUM, the rows are only deleted and autovacuum takes them in its time."""
    from django.db import connection

    if connection.in_atomic_block:
        return sum(bench_user_remove(user_id) for user_id in user_ids)
    start = time.perf_counter()
    _knowledge_graph_drop()
    rows = sum(bench_user_remove(user_id) for user_id in user_ids)
    _vacuum()
    _indexes_build(kind)
    print(f"brain bench {kind}: removed its rows ({rows} knowledge rows), vacuumed their tables and rebuilt the "
          f"knowledge vector index in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return rows


def _knowledge_graph_drop() -> None:
    from django.db import connection
    from pgvector.django import HnswIndex

    from knowledge.models import KnowledgeItem

    with connection.cursor() as cursor:
        for index in KnowledgeItem._meta.indexes:
            if isinstance(index, HnswIndex):
                cursor.execute(f'DROP INDEX IF EXISTS "{index.name}"')


def _vacuum() -> None:
    from django.db import connection

    from knowledge.models import KnowledgeItem
    from sessions.models import Session, SessionEvent

    with connection.cursor() as cursor:
        for model in (KnowledgeItem, SessionEvent, Session):
            cursor.execute(f'VACUUM (ANALYZE) "{model._meta.db_table}"')


def _indexes_build(kind: str) -> None:
    """Every declared index the database lacks, the dropped graph among them (`brain doctor --restore-indexes`)."""
    from brain.db_indexes import indexes_restore

    indexes_restore(lambda line: print(f"brain bench {kind}: {line}", file=sys.stderr))


def leftovers_remove(kind: str) -> int:
    """Removes the users earlier runs of the `kind` bench left, with their rows; returns the knowledge rows removed."""
    from projects.models import User

    users = list(User.objects.filter(email__startswith=f"{kind}-", email__endswith=f"@{DOMAIN}")
                 .values_list("id", flat=True))
    if not users:
        return 0
    rows = users_remove(kind, users)
    print(f"brain bench {kind}: removed {len(users)} user(s) and {rows} knowledge rows that an earlier run "
          "left behind (it did not finish)", file=sys.stderr)
    return rows


@contextmanager
def bench_user(kind: str) -> Iterator[Any]:
    """A fresh user for one run of the `kind` bench, removed with its rows afterwards; what earlier runs left is
    removed first. Raises BenchBusy when another run of it holds this database."""
    from django.db import connection

    from projects.services.accounts import user_create

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_lock_key(kind)])
        row = cursor.fetchone()
    if not row or not row[0]:
        raise BenchBusy(f"brain bench {kind}: another run of this bench is using this database; wait for it to end")
    try:
        leftovers_remove(kind)
        user = user_create(email=f"{kind}-{uuid.uuid4().hex[:10]}@{DOMAIN}")
        try:
            yield user
        finally:
            users_remove(kind, [user.pk])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_lock_key(kind)])
