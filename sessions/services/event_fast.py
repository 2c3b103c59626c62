"""brain_log_event in one statement: the ownership check of the session, the event's insert (its full-text is a
generated column) and nothing else. The vector follows from the batcher after the commit.

It stands for the locked session read (`session_owned(..., for_update=True)`) and the insert that followed it.
The SELECT feeding the INSERT is the ORM's own `sessions_owned` query (the caller's sessions in projects its
token can see) narrowed to this open session, and it takes FOR KEY SHARE on the session row: a concurrent close
(which holds FOR UPDATE) is waited for, after which the row is checked again and, closed, yields nothing. When
nothing is inserted the caller takes the step-by-step path, which tells apart "not found" and "already closed".
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection
from django.utils import timezone

from projects.scope import Principal
from sessions.models import Session, SessionEvent
from sessions.selectors.owned import sessions_owned

FROM_SESSION = ("session_id", "project_id")  # columns taken from the session row the SELECT found


def _source(principal: Principal, pk: uuid.UUID) -> tuple[str, tuple[Any, ...]]:
    qs = sessions_owned(principal=principal).filter(pk=pk, ended_at__isnull=True).order_by()
    sql, params = qs.values_list("id", "project_id").query.sql_with_params()
    return f'{sql} FOR KEY SHARE OF "{Session._meta.db_table}"', params


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
    fields = [f for f in SessionEvent._meta.concrete_fields if not getattr(f, "generated", False)]
    values: list[str] = []
    params: list[Any] = []
    for f in fields:
        if f.attname in FROM_SESSION:
            values.append(f'src."{f.attname}"')
            continue
        values.append("%s")
        params.append(f.get_db_prep_save(f.pre_save(event, True), connection))
    source, source_params = _source(principal, pk)
    columns = ", ".join(f'"{f.column}"' for f in fields)
    alias = ", ".join(f'"{col}"' for col in FROM_SESSION)
    # Table and column names come from the models only; every value is a parameter.
    sql = (f'INSERT INTO "{SessionEvent._meta.db_table}" ({columns}) SELECT {", ".join(values)} '  # noqa: S608
           f'FROM ({source}) AS src ({alias}) RETURNING "project_id"')
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *source_params])
        row = cursor.fetchone()
    if row is None:
        return None
    event.project_id = row[0]
    event._state.adding = False
    event._state.db = connection.alias
    return event
