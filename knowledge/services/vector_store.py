"""A batch of computed vectors stored by one statement, their rows read by one statement compiled once.

The ORM's `bulk_update` wrote a `CASE WHEN` per row with each vector as a text literal of 384 numbers: pgvector's
formatting alone cost about 0.17 ms of Python a row, and the expression's compile came on top, all under the GIL
of the web worker whose batcher thread runs it at low priority, so the requests of that worker waited behind it.
Here a batch's vectors travel as one binary `float4[]` parameter (numpy writes it) and SQL cuts each row's slice
and casts it to `vector`; the stored values are the model's float32 numbers exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import cache
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import psycopg
from django.db import connection
from psycopg.adapt import Dumper
from psycopg.pq import Format

from brain.sql_rows import relaxed_from_item

if TYPE_CHECKING:  # backfill stores its vectors here
    from knowledge.services.backfill import Target

FLOAT4_OID = 700
FLOAT4_ARRAY_OID = 1021
_IDS = object()  # stands for the batch's ids in the compiled read


class Float4Array:
    """Floats sent as one binary PostgreSQL `float4[]` (`_Float4ArrayDumper`)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = np.ascontiguousarray(values, dtype=np.float32).ravel()


class _Float4ArrayDumper(Dumper):
    format = Format.BINARY
    oid = FLOAT4_ARRAY_OID

    def dump(self, obj: Any) -> bytes:
        values = obj.values
        # The array's binary form: dimensions, flags, element type, length and lower bound, then each element as
        # its byte count and its big-endian value.
        cells = np.empty(len(values), dtype=[("size", ">i4"), ("value", ">f4")])
        cells["size"] = 4
        cells["value"] = values
        return struct.pack(">iiiii", 1, 0, FLOAT4_OID, len(values), 1) + cells.tobytes()


class Pending(NamedTuple):
    """A row to embed: its key, the text to embed, and the values of the target's fields that text was made from."""

    pk: Any
    text: str
    sources: tuple[Any, ...]


def vectors_store(target: Target, rows: Sequence[Pending], vectors: Sequence[Sequence[float]], model: str) -> int:
    """Stores `vectors[i]` with `model` on `rows[i]` of the target's table, unless that row's text changed since it was
    read; returns the rows updated. The vector of an old text would otherwise stay for good: the write that changed
    the text queued the row again, but the batch that read it before stored last, and the backfill only looks for rows
    without a vector of the current model (two approvals of one skill, or two quick edits)."""
    if not rows:
        return 0
    flat = np.asarray(vectors, dtype=np.float32)
    table = target.model._meta.db_table
    columns = [target.model._meta.get_field(name).column for name in target.fields]  # type: ignore[union-attr]
    arrays = "".join(f", %(src{i})s::text[]" for i in range(len(columns)))
    names = "".join(f", src{i}" for i in range(len(columns)))
    same = "".join(f' AND t."{column}" IS NOT DISTINCT FROM v.src{i}' for i, column in enumerate(columns))
    # A vector can always be computed again (the backfill embeds every row left without one), so the commit does not
    # wait for the WAL flush: a database crash loses at most the last fraction of a second of vectors, never a row.
    sql = f"""UPDATE "{table}" AS t
        SET embedding = ((%(flat)b)[(v.n - 1) * %(dim)s + 1 : v.n * %(dim)s])::vector, embedding_model = %(model)s
        FROM unnest(%(ids)s::uuid[]{arrays}) WITH ORDINALITY AS v(id{names}, n){relaxed_from_item()}
        WHERE t.id = v.id{same}"""  # noqa: S608 - the model's table and columns
    params: dict[str, Any] = {"flat": Float4Array(flat), "dim": flat.shape[1], "model": model,
                              "ids": [row.pk for row in rows]}
    params |= {f"src{i}": [row.sources[i] for row in rows] for i in range(len(columns))}
    connection.ensure_connection()
    # Django's cursors bind values into the query text; a binary parameter needs PostgreSQL to bind it. Errors still
    # reach callers as Django's (DatabaseError and its kin), as from any other statement.
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.adapters.register_dumper(Float4Array, _Float4ArrayDumper)
        cursor.execute(sql, params)
        return cursor.rowcount


def pending_of(target: Target, row: Any) -> Pending:
    """A model instance (with the target's fields loaded) as a row to embed."""
    return Pending(row.pk, target.text_of(row), tuple(getattr(row, name) for name in target.fields))


@cache
def _read_sql(target: Target) -> tuple[str, tuple[Any, ...]]:
    """The target's read of rows still without a vector among some ids, compiled by the ORM once."""
    rows = target.model.objects.filter(embedding__isnull=True)  # type: ignore[attr-defined]
    if target.extra is not None:
        rows = rows.filter(target.extra)
    pk = f'"{target.model._meta.db_table}"."{target.model._meta.pk.column}"'
    # The model's own table and key only; the ids are a parameter.
    rows = rows.extra(where=[f"{pk} = ANY(%s)"], params=[_IDS])  # noqa: S610
    rows = rows.order_by().values_list("pk", *target.fields)
    sql, params = rows.query.sql_with_params()
    return sql, tuple(params)


def rows_without_vectors(target: Target, ids: Sequence[Any]) -> list[Pending]:
    """The rows among `ids` that still have no vector, with the text to embed and what it was made from."""
    sql, template = _read_sql(target)
    params = [list(ids) if value is _IDS else value for value in template]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    fields = target.fields
    return [pending_of(target, SimpleNamespace(pk=row[0], **dict(zip(fields, row[1:], strict=True)))) for row in found]
