"""brain_log_event in one statement: the ownership check of the session, the event's insert (its full-text is a
generated column, its position one past the session's last, read from the (session, position) index) and
nothing else. The vector follows from the batcher after the commit.

It stands for the locked session read (`session_owned(..., for_update=True)`) and the insert that followed it.
The SELECT feeding the INSERT is `sessions_owned`'s scope written out (the caller's own session, in a project
of one of the caller's orgs, the token's project only for a scoped token) narrowed to this open session, and it
takes FOR KEY SHARE on the session row: a concurrent close (which holds FOR UPDATE) is waited for, after which
the row is checked again and, closed, yields nothing. When nothing is inserted the caller takes the
step-by-step path, which tells apart "not found" and "already closed". The statement is written once per
process (building it with the ORM on every call cost more than running it) and prepared once per connection
(PostgreSQL parsed and planned it for every event).
"""

from __future__ import annotations

import re
import uuid
from functools import cache
from typing import Any

from django.db import connection
from django.utils import timezone

from brain.sql_rows import db_values, execute_prepared
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import visible_project_params, visible_project_sql
from sessions.models import Session, SessionEvent

FROM_SESSION = ("session_id", "project_id")  # columns taken from the session row the SELECT found
IN_SQL = (*FROM_SESSION, "position")  # columns the statement fills itself, not from parameters


@cache
def _fields() -> list[Any]:
    """The columns an INSERT writes (a generated column, the full-text, is left to PostgreSQL)."""
    return [f for f in SessionEvent._meta.concrete_fields if not getattr(f, "generated", False)]


def _value(field: Any, event: str) -> str:
    """What the INSERT's SELECT writes into one column: the session row's own, the session's next position
    (one past its last, from the (session, position) index), or the parameter of that name, cast to the column's
    type (a prepared SELECT list does not take its parameters' types from the INSERT's columns) without its
    modifier: an explicit cast to varchar(n) would cut a long value where the column's own check refuses it."""
    name = field.attname
    if name in FROM_SESSION:
        return f's."{name}"'
    if name == "position":
        return f'(SELECT coalesce(max(e.position) + 1, 0) FROM "{event}" AS e WHERE e.session_id = s.session_id)'  # noqa: S608
    return f"%({name})s::{re.sub(r'[(].*[)]', '', field.db_type(connection))}"


@cache
def _statement() -> str:
    event, session, project = SessionEvent._meta.db_table, Session._meta.db_table, Project._meta.db_table
    values = ", ".join(_value(f, event) for f in _fields())
    columns = ", ".join(f'"{f.column}"' for f in _fields())
    # Table and column names come from the models only; every value is a parameter.
    return f"""INSERT INTO "{event}" ({columns})
        SELECT {values} FROM (
          SELECT s.id AS session_id, s.project_id FROM "{session}" AS s JOIN "{project}" AS p ON p.id = s.project_id
          WHERE s.id = %(sid)s AND s.user_id = %(user)s AND s.ended_at IS NULL AND {visible_project_sql("p")}
          FOR KEY SHARE OF s) AS s
        RETURNING project_id, position"""  # noqa: S608


def event_insert_owned(
    *, principal: Principal, session_id: str, event_type: str, payload: dict[str, Any], content: str,
) -> SessionEvent | None:
    """Inserts the event into the caller's open session in one statement; None when no such session (nothing
    was written)."""
    try:
        pk = uuid.UUID(str(session_id))
    except ValueError:
        return None
    now = timezone.now()
    event = SessionEvent(session_id=pk, user_id=principal.user.pk, event_type=event_type, payload=payload,
                         content=content, occurred_at=now, embedding=None, embedding_model="")
    params = db_values(event, [f for f in _fields() if f.attname not in IN_SQL])
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_event_insert_owned", _statement(),
                         {**params, **visible_project_params(principal), "sid": pk})
        row = cursor.fetchone()
    if row is None:
        return None
    event.project_id, event.position = row
    event._state.adding = False
    event._state.db = connection.alias
    return event
