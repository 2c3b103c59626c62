"""Model instances from hand-written SQL on the hot path, built the way the ORM builds them (`Model.from_db`).

The per-call reads and writes of the hot path (the token and tools/call authentication, the project list, the
caller's session, an event's insert) are one fixed statement each, written once per process from the models'
metadata and prepared once per connection: Django would otherwise rebuild and recompile the same query on
every call, which cost as much as the round trip itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from django.db import ProgrammingError, connection, transaction
from django.db.models import Model
from psycopg.errors import InvalidSqlStatementName

Aliased = Sequence[tuple[str, type[Model]]]


def failure_contained() -> AbstractContextManager[Any]:
    """Where a statement that may fail runs: inside a caller's transaction a savepoint, so the failure does not abort
    it; in autocommit mode nothing, since a failed statement aborts nothing there and BEGIN and COMMIT would be two
    more round trips."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


def select_list(aliases: Aliased) -> str:
    """Every concrete column of each aliased model, in field order: `a."col", ..., b."col"`."""
    return ", ".join(f'{alias}."{field.column}"' for alias, model in aliases for field in model._meta.concrete_fields)


@cache
def _converters(model: type[Model]) -> list[tuple[int, list[Any]]]:
    """(position, converters) of the model's fields whose database values need converting (a JSON column
    arrives as text, as the ORM's own compiler receives it)."""
    fields: list[Any] = list(model._meta.concrete_fields)  # get_db_converters is missing from django-stubs' Field
    return [(i, f.get_db_converters(connection)) for i, f in enumerate(fields) if f.get_db_converters(connection)]


def instances(row: Sequence[Any], aliases: Aliased) -> dict[str, Model | None]:
    """One instance per alias from a row laid out by `select_list`; None where an outer join found no row."""
    built: dict[str, Model | None] = {}
    start = 0
    for alias, model in aliases:
        fields = model._meta.concrete_fields
        values = list(row[start:start + len(fields)])
        start += len(fields)
        if values[0] is None:
            built[alias] = None
            continue
        for position, converters in _converters(model):
            for convert in converters:
                values[position] = convert(values[position], None, connection)
        built[alias] = model.from_db(connection.alias, [f.attname for f in fields], values)
    return built


def partial_instances(rows: Sequence[Sequence[Any]], model: type[Model], attnames: Sequence[str]) -> list[Model]:
    """Instances of `model` holding only `attnames` (the rest deferred, as `QuerySet.only` leaves them) from rows
    laid out in that order, each value converted as the ORM converts it."""
    concrete: list[Any] = list(model._meta.concrete_fields)  # get_db_converters is missing from django-stubs' Field
    place = {f.attname: n for n, f in enumerate(concrete)}
    converters = [(i, concrete[place[name]].get_db_converters(connection)) for i, name in enumerate(attnames)]
    # `Model.from_db` takes a partial row in the model's field order.
    order = sorted(range(len(attnames)), key=lambda i: place[attnames[i]])
    names = [attnames[i] for i in order]
    built = []
    for row in rows:
        values = list(row)
        for position, field_converters in converters:
            for convert in field_converters:
                values[position] = convert(values[position], None, connection)
        built.append(model.from_db(connection.alias, names, [values[i] for i in order]))
    return built


def db_values(obj: Model, fields: Sequence[Any]) -> dict[str, Any]:
    """What an INSERT of `obj` writes to each of `fields`, by attname, as the ORM would (`pre_save` fills the
    automatic columns, such as timestamps)."""
    return {f.attname: f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields}


# Statements PREPAREd on each database connection, by name. Keyed by the driver's connection object, so a
# reconnect (a new object) prepares again.
_prepared: WeakKeyDictionary[Any, set[str]] = WeakKeyDictionary()
_NAMED = re.compile(r"%\((\w+)\)s")


def _positional(sql: str) -> tuple[str, list[str]]:
    """`%(name)s` placeholders turned into PREPARE's `$n`, and the parameter names in `$n` order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return _NAMED.sub(number, sql), names


def execute_prepared(cursor: Any, name: str, sql: str, params: dict[str, Any], *, prefix: str = "",
                     suffix: str = "") -> None:
    """Runs `sql` (named `%(…)s` placeholders) as a server-side prepared statement of this connection, so
    PostgreSQL plans it once per connection instead of on every call (planning cost more than running these
    per-call statements). `prefix` is a statement sent in the same query string (then the cursor is moved to
    the prepared statement's result), `suffix` one sent after it (its result is left unread). A statement the
    server no longer knows (a pooler's DISCARD) is prepared again once."""
    positional, names = _positional(sql)
    raw = connection.connection
    done = _prepared.setdefault(raw, set())
    for attempt in (1, 2):
        if name not in done:
            cursor.execute(f"PREPARE {name} AS {positional}")
            done.add(name)
        try:
            cursor.execute(f"{prefix}EXECUTE {name}({', '.join(['%s'] * len(names))}){suffix}",
                           [params[n] for n in names])
        except ProgrammingError as exc:
            if attempt == 2 or not isinstance(exc.__cause__, InvalidSqlStatementName):
                raise
            done.discard(name)
            continue
        if prefix:
            cursor.nextset()
        return


# In a statement's own query string (see `execute_generic`): the prepared statement after it runs on its generic plan.
GENERIC_PLAN = ("plan_cache_mode", "force_generic_plan")


def local_settings(settings: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """The statement that sets `settings` (name, value) for the statement after it in one query string, and the one
    to send after that statement (blank or starting with "; "). The query string runs as one transaction, so outside
    an enclosing one the settings end with it; inside one they would last for the rest of it, and a statement
    planned there (a prepared one's generic plan, kept for the connection) would be planned under them, so the
    second statement puts them back to the session's values."""
    calls = ", ".join(f"set_config('{name}', '{value}', true)" for name, value in settings)
    if not connection.in_atomic_block:
        return f"SELECT {calls}", ""
    back = ", ".join(f"set_config('{name}', (SELECT reset_val FROM pg_settings WHERE name = '{name}'), true)"  # noqa: S608
                     for name, _ in settings)
    return f"SELECT {calls}", f"; SELECT {back}"


def execute_generic(cursor: Any, kind: str, sql: str, params: dict[str, Any], *, counts: Sequence[str] = (),
                    settings: Sequence[tuple[str, str]] = ()) -> None:
    """Runs `sql` as this connection's prepared statement named after its text, on its generic plan: planned once
    per connection, for a statement whose plan's shape its SQL already fixes, so no value would change it.
    `counts`: integer parameters written into the SQL (its LIMITs), which a generic plan would otherwise guess.
    `settings`: more (name, value) settings it runs under (`local_settings`)."""
    for name in counts:
        sql = sql.replace(f"%({name})s", str(int(params[name])))
    digest = hashlib.sha1(sql.encode(), usedforsecurity=False).hexdigest()[:16]
    before, after = local_settings([*settings, GENERIC_PLAN])
    execute_prepared(cursor, f"brain_{kind}_{digest}", sql, params, prefix=f"{before}; ", suffix=after)


def prepared_rows(name: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every row of `sql` run as this connection's prepared statement `name` (see `execute_prepared`)."""
    with connection.cursor() as cursor:
        execute_prepared(cursor, name, sql, params)
        return list(cursor.fetchall())


# Applies to the implicit transaction of the one query string it starts (PostgreSQL runs a multi-statement
# simple query as one transaction).
ASYNC_COMMIT = "SET LOCAL synchronous_commit TO OFF"
# The same as an expression, for a statement that cannot be preceded by another (one with binary parameters): in a
# FROM item it relaxes the commit of that statement's own autocommit transaction.
ASYNC_COMMIT_CALL = "set_config('synchronous_commit', 'off', true)"


def relaxed_prefix() -> str:
    """The prefix that lets one autocommit statement's commit skip the wait for the WAL flush, for bookkeeping
    whose loss in a database crash costs nothing (a call count, an outbox row's "sent" stamp: the sweep then
    sends it again). Empty inside an enclosing transaction, whose other writes it would relax too."""
    return "" if connection.in_atomic_block else f"{ASYNC_COMMIT}; "


def relaxed_from_item() -> str:
    """`relaxed_prefix` for a statement that must stand alone (binary parameters): a FROM item to append after the
    statement's own ones (a vector, which the backfill computes again if a crash loses it). Empty inside an
    enclosing transaction."""
    return "" if connection.in_atomic_block else f", (SELECT {ASYNC_COMMIT_CALL}) AS relaxed_commit"


def _insert_sql(group: Sequence[Model], start: int, params: dict[str, Any]) -> str:
    """One INSERT of `group` (instances of one model) as a multi-row VALUES; fills `params` under unique names."""
    meta = group[0]._meta
    fields = [f for f in meta.concrete_fields if not getattr(f, "generated", False)]  # generated: PostgreSQL's
    rows = []
    for n, obj in enumerate(group, start):
        values = db_values(obj, fields)
        params.update({f"r{n}_{name}": value for name, value in values.items()})
        rows.append("(" + ", ".join(f"%(r{n}_{f.attname})s" for f in fields) + ")")
    columns = ", ".join(f'"{f.column}"' for f in fields)
    return f'INSERT INTO "{meta.db_table}" ({columns}) VALUES {", ".join(rows)}'  # noqa: S608


def insert_together(objs: Sequence[Model]) -> None:
    """Inserts new instances in one statement, all or nothing without a BEGIN and COMMIT of their own: each run
    of one model is an INSERT, the earlier ones as data-modifying CTEs. Foreign keys are checked at the
    statement's end, so a row may reference one inserted beside it (a session's events)."""
    groups: list[list[Model]] = []
    for obj in objs:
        if groups and type(groups[-1][0]) is type(obj):
            groups[-1].append(obj)
        else:
            groups.append([obj])
    params: dict[str, Any] = {}
    statements, start = [], 0
    for group in groups:
        statements.append(_insert_sql(group, start, params))
        start += len(group)
    ctes = ", ".join(f"w{i} AS ({sql})" for i, sql in enumerate(statements[:-1]))
    with connection.cursor() as cursor:
        cursor.execute((f"WITH {ctes} " if ctes else "") + statements[-1], params)
    for obj in objs:
        obj._state.adding = False
        obj._state.db = connection.alias


def xact_lock(key: str) -> None:
    """Holds a PostgreSQL advisory lock named by `key` until the current transaction ends: writers that must not
    interleave (two creates of one name, two first calls of one session) take turns, and the second sees what the
    first committed."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key])
