"""`brain doctor`'s indexes line and `--restore-indexes`: the indexes the models declare (the search indexes among
them) against those the database holds usable.

An index goes missing without any migration knowing: a `brain bench` run killed during its load has dropped the
knowledge table's HNSW and GIN indexes, and an interrupted concurrent build leaves one marked invalid. Searches then
still answer, from a scan of the whole table, so nothing but their speed says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection, connections

from brain.health import Check, pending_migrations


def missing_indexes() -> list[tuple[Any, Any]]:
    """(model, index) of every index the installed models declare that the database lacks or holds invalid."""
    from django.apps import apps

    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
                       "WHERE c.relnamespace = current_schema()::regnamespace AND x.indisvalid")
        usable = {name for (name,) in cursor.fetchall()}
    models = [m for m in apps.get_models() if m._meta.managed and not m._meta.proxy]
    return [(model, index) for model in models for index in model._meta.indexes if index.name not in usable]


def check_indexes() -> Check:
    try:
        if pending_migrations():  # a pending migration's index is the migration's to build
            return True, "checked once the migrations are applied"
        missing = missing_indexes()
    except Exception as exc:
        return False, f"cannot read the indexes: {type(exc).__name__}"
    if not missing:
        return True, "every declared index is built and usable"
    names = ", ".join(index.name for _, index in missing)
    return False, (f"missing or unusable: {names}. Searches scan whole tables until `brain doctor --restore-indexes` "
                   "builds them (minutes for a large table)")


# What a rebuild may use (`maintenance_work_mem`, never below the server's own): pgvector builds the HNSW graph in
# it, and one that outgrows it is finished on disk several times slower; PostgreSQL's default is 64 MB, and the
# graph of a million 384-dimension rows needs about 2 GB (brain/bench/scale.py builds with 4 GB).
BUILD_MEMORY_KB = 1024 * 1024
PROGRESS_EVERY_S = 5.0  # how often a running build is reported


def _build_memory(editor: Any) -> str:
    """Raises `maintenance_work_mem` for the build's transaction to BUILD_MEMORY_KB; returns what it is."""
    editor.execute("SELECT set_config('maintenance_work_mem', greatest(setting::bigint, %s) || 'kB', true) "
                   "FROM pg_settings WHERE name = 'maintenance_work_mem'", [BUILD_MEMORY_KB])
    with editor.connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        row = cursor.fetchone()
    return str(row[0]) if row else "?"


def progress_line(name: str, row: tuple[Any, ...] | None) -> str | None:
    """One line of a running build from its `pg_stat_progress_create_index` row (phase, tuples done and total,
    blocks done and total), or None when the build is not listed (not started, or done)."""
    if row is None:
        return None
    phase, tuples_done, tuples_total, blocks_done, blocks_total = row
    if tuples_total:
        return f"  {name}: {phase}, {tuples_done:,} of {tuples_total:,} rows ({100 * tuples_done // tuples_total}%)"
    if blocks_total:
        return f"  {name}: {phase}, {blocks_done:,} of {blocks_total:,} blocks ({100 * blocks_done // blocks_total}%)"
    if tuples_done:  # pgvector's HNSW build counts the rows it has put in the graph, with no total
        return f"  {name}: {phase}, {tuples_done:,} rows"
    return f"  {name}: {phase}"


class BuildProgress(threading.Thread):
    """Says how a CREATE INDEX run by backend `pid` is getting on, every `every` seconds, from its own connection:
    an HNSW graph over a million rows takes minutes, and the build itself prints nothing until it is done."""

    def __init__(self, pid: int, name: str, say: Callable[[str], None], every: float = PROGRESS_EVERY_S) -> None:
        super().__init__(name=f"index-progress-{name}", daemon=True)
        self.pid, self.index, self.say, self.every = pid, name, say, every
        self.done = threading.Event()

    def run(self) -> None:
        try:
            while not self.done.wait(self.every):
                with connections["default"].cursor() as cursor:
                    cursor.execute("SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total "
                                   "FROM pg_stat_progress_create_index WHERE pid = %s", [self.pid])
                    line = progress_line(self.index, cursor.fetchone())
                if line:
                    self.say(line)
        finally:
            connections["default"].close()  # this thread's own connection

    def stop(self) -> None:
        self.done.set()
        self.join()


def indexes_restore(say: Callable[[str], None], every: float = PROGRESS_EVERY_S) -> int:
    """Builds every missing or invalid declared index as its model declares it, saying how each build is getting on
    every `every` seconds; returns how many were built."""
    missing = missing_indexes()
    for model, index in missing:
        with connection.schema_editor() as editor:
            memory = _build_memory(editor)
            say(f"building {index.name} on {model._meta.db_table} (maintenance_work_mem {memory}) ...")
            editor.execute(f'DROP INDEX IF EXISTS "{index.name}"')  # an invalid one of the same name
            progress = BuildProgress(_backend_pid(), index.name, say, every)
            progress.start()
            try:
                editor.add_index(model, index)
            finally:
                progress.stop()
    return len(missing)


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        row = cursor.fetchone()
    return int(row[0]) if row else 0
