"""`brain doctor`'s indexes line and `--restore-indexes`: the indexes the models declare (the search indexes among
them) against those the database holds usable.

An index goes missing without any migration knowing: a `brain bench` run killed during its load has dropped the
knowledge table's HNSW and GIN indexes, and an interrupted concurrent build leaves one marked invalid. Searches then
still answer, from a scan of the whole table, so nothing but their speed says so.

An index can also be there with other storage parameters than its model declares (an `ALTER INDEX ... SET` made by
hand, a table restored from another schema's dump). Those change what every search costs: a GIN index with
`fastupdate` on keeps a pending list that each search reads in full until a vacuum merges it (5,000 written rows
made an open at 100,000 rows 5-9 ms slower, docs/benchmarks.md, issue 17, thirty-seventh pass), and an HNSW graph
built with other `m` or `ef_construction` finds other neighbours. Such an index is rebuilt as declared too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection, connections

from brain.health import Check, pending_migrations


def _declared() -> list[tuple[Any, Any]]:
    """(model, index) of every index the installed models declare."""
    from django.apps import apps

    models = [m for m in apps.get_models() if m._meta.managed and not m._meta.proxy]
    return [(model, index) for model in models for index in model._meta.indexes]


def _live_options() -> dict[str, dict[str, str] | None]:
    """Each index of the schema by name, with its storage parameters (None: held invalid)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname, x.indisvalid, coalesce(c.reloptions, '{}') FROM pg_index x "
                       "JOIN pg_class c ON c.oid = x.indexrelid WHERE c.relnamespace = current_schema()::regnamespace")
        return {name: _options(options) if valid else None for name, valid, options in cursor.fetchall()}


_ON, _OFF = {"on", "true", "yes", "1"}, {"off", "false", "no", "0"}


def _options(pairs: Iterable[str]) -> dict[str, str]:
    """`name = value` pairs (a model's WITH clause or `pg_class.reloptions`) as a dict, booleans spelt one way."""
    out = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        value = value.strip().strip("'").lower()
        out[name.strip().lower()] = "on" if value in _ON else "off" if value in _OFF else value
    return out


def declared_options(index: Any) -> dict[str, str]:
    """The storage parameters `index` is declared with (PostgreSQL's own index types and pgvector's say them)."""
    return _options(index.get_with_params() if hasattr(index, "get_with_params") else [])


@dataclass(frozen=True)
class Drift:
    """A declared index built with other storage parameters (`live`) than its model declares (`declared`)."""

    model: Any
    index: Any
    live: dict[str, str]
    declared: dict[str, str]

    def describe(self) -> str:
        names = sorted(set(self.live) | set(self.declared))
        said = ", ".join(f"{name} {self.live.get(name, 'default')} (declared {self.declared.get(name, 'default')})"
                         for name in names if self.live.get(name) != self.declared.get(name))
        return f"{self.index.name}: {said}"


def indexes_review() -> tuple[list[tuple[Any, Any]], list[Drift]]:
    """From one read of the catalog: (model, index) of every declared index the database lacks or holds invalid, and
    every declared index it holds usable but with other storage parameters than declared."""
    live = _live_options()
    missing: list[tuple[Any, Any]] = []
    drifts: list[Drift] = []
    for model, index in _declared():
        options, declared = live.get(index.name), declared_options(index)
        if options is None:
            missing.append((model, index))
        elif options != declared:
            drifts.append(Drift(model, index, options, declared))
    return missing, drifts


def missing_indexes() -> list[tuple[Any, Any]]:
    return indexes_review()[0]


def drifted_indexes() -> list[Drift]:
    return indexes_review()[1]


def check_indexes() -> Check:
    try:
        if pending_migrations():  # a pending migration's index is the migration's to build
            return True, "checked once the migrations are applied"
        missing, drifted = indexes_review()
    except Exception as exc:
        return False, f"cannot read the indexes: {type(exc).__name__}"
    if not missing and not drifted:
        return True, "every declared index is built and usable, with its declared options"
    problems = [f"missing or unusable: {', '.join(index.name for _, index in missing)}"] if missing else []
    if drifted:
        problems.append(f"built with other options than declared: {'; '.join(d.describe() for d in drifted)}")
    return False, (f"{'. '.join(problems)}. Searches scan whole tables or read more than they need until "
                   "`brain doctor --restore-indexes` builds them as declared (minutes for a large table)")


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
    """Builds every missing, invalid or drifted declared index as its model declares it, saying how each build is
    getting on every `every` seconds; returns how many were built."""
    missing, drifted = indexes_review()
    wanted = [*missing, *((drift.model, drift.index) for drift in drifted)]
    for model, index in wanted:
        with connection.schema_editor() as editor:
            memory = _build_memory(editor)
            say(f"building {index.name} on {model._meta.db_table} (maintenance_work_mem {memory}) ...")
            editor.execute(f'DROP INDEX IF EXISTS "{index.name}"')  # an invalid or drifted one of the same name
            progress = BuildProgress(_backend_pid(), index.name, say, every)
            progress.start()
            try:
                editor.add_index(model, index)
            finally:
                progress.stop()
    return len(wanted)


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        row = cursor.fetchone()
    return int(row[0]) if row else 0
