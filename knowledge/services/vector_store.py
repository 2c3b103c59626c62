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
from typing import TYPE_CHECKING, Any

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


def vectors_store(target: Target, ids: Sequence[Any], vectors: Sequence[Sequence[float]], model: str) -> int:
    """Stores `vectors[i]` with `model` on the row `ids[i]` of the target's table; returns the rows updated."""
    if not ids:
        return 0
    flat = np.asarray(vectors, dtype=np.float32)
    table = target.model._meta.db_table
    # A vector can always be computed again (the backfill embeds every row left without one), so the commit does not
    # wait for the WAL flush: a database crash loses at most the last fraction of a second of vectors, never a row.
    sql = f"""UPDATE "{table}" AS t
        SET embedding = ((%(flat)b)[(v.n - 1) * %(dim)s + 1 : v.n * %(dim)s])::vector, embedding_model = %(model)s
        FROM unnest(%(ids)s::uuid[]) WITH ORDINALITY AS v(id, n){relaxed_from_item()} WHERE t.id = v.id"""  # noqa: S608 - model's table
    connection.ensure_connection()
    # Django's cursors bind values into the query text; a binary parameter needs PostgreSQL to bind it.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.adapters.register_dumper(Float4Array, _Float4ArrayDumper)
        cursor.execute(sql, {"flat": Float4Array(flat), "dim": flat.shape[1], "model": model, "ids": list(ids)})
        return cursor.rowcount


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


def rows_without_vectors(target: Target, ids: Sequence[Any]) -> list[tuple[Any, str]]:
    """(id, text to embed) of the rows among `ids` that still have no vector."""
    sql, template = _read_sql(target)
    params = [list(ids) if value is _IDS else value for value in template]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    fields = target.fields
    return [(row[0], target.text_of(SimpleNamespace(**dict(zip(fields, row[1:], strict=True))))) for row in found]
