"""One round trip for a handshake-era tools/call: the token (with its user and project) and the session are
read, checked and the call counted in a single UPDATE ... RETURNING.

It stands for three statements (token lookup, session lookup, the per-call UPDATE) that every tools/call
used to pay in turn. The checks are the same as theirs, in SQL: the token's digest matches, it is not
revoked nor expired and its user is active (so a revocation holds on the very next call); the session is
open, not idle-expired and was opened by this very token. When no row comes back the caller takes the
slow path, which tells apart the reasons (401 unknown token, 404 gone session, 401 mismatch).

The UPDATE only counts the call and stamps the session's last use, so its commit does not wait for the WAL flush
(`synchronous_commit` off for that one implicit transaction, a third of the statement's time): after a database
crash a session may show a few calls less, never a write of the caller's. Inside an enclosing transaction the
setting is left alone, since it would apply to that transaction's other writes too.

For the tools that only list the caller's projects (LISTS_PROJECTS) the same statement also reads that list,
joined to the counted row, so their whole call is one round trip; it sees the very scope a later read would. A
session opened without a named project lands in the first of that list, so for it the statement reads that one
(`Listing` "first"), in place of a statement of its own on every open.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from brain.sql_rows import execute_prepared, instances, relaxed_prefix, select_list
from mcpgw.models import SESSION_ID_MAX, McpSession
from mcpgw.selectors import idle_cutoff, orphan_cutoff
from projects.models import ApiToken, Project, User
from projects.selectors.accounts import LISTED, listed_sql, project_listed, token_digest, token_joined

ALIASES: tuple[tuple[str, type[Model]], ...] = (("s", McpSession), ("t", ApiToken), ("u", User), ("p", Project))
# Read-only tools whose work is the caller's visible projects: their call's round trip reads that list too, so
# the whole call is one statement (nothing in them creates a project, so the list cannot go stale mid-call).
LISTS_PROJECTS = frozenset({"brain_list_projects", "brain_get_active_project"})
# Tools that open a session in the caller's first visible project unless told another (`project_resolve`).
OPENS_IN_FIRST_PROJECT = frozenset({"brain_start_session"})
# What a counted call reads of the caller's visible projects besides: nothing, all of them, or the first one.
Listing = Literal["", "all", "first"]


@dataclass(frozen=True)
class CountedCall:
    """A counted tools/call: its live session (`.token` with `.user` and `.project` loaded) and, when asked
    for, the projects its principal sees (projects_visible's order)."""

    session: McpSession
    listed: tuple[Project, ...] | None = None
    listing: Listing = ""  # what `listed` holds: all the visible projects, or the first one


@cache
def _columns() -> tuple[str, ...]:
    return tuple(select_list(ALIASES).split(", "))


@cache
def _statement(listing: Listing) -> str:
    s, t, u, p = (model._meta.db_table for _, model in ALIASES)
    columns = _columns()
    # Inside a WITH the returned columns need names of their own (every table has an "id").
    named = (f"{column} AS c{i}" for i, column in enumerate(columns))
    returning = ", ".join(named if listing else columns)
    # Table and column names come from the models only; every value is a parameter.
    update = f"""UPDATE "{s}" AS s SET tool_call_count = s.tool_call_count + 1, last_seen_at = %(now)s
        FROM "{t}" AS t JOIN "{u}" AS u ON u.id = t.user_id LEFT JOIN "{p}" AS p ON p.id = t.project_id
        WHERE s.id = %(sid)s AND s.token_id = t.id AND s.closed_at IS NULL
          AND CASE WHEN s.tool_call_count > 0 THEN s.last_seen_at >= %(cutoff)s ELSE s.created_at >= %(orphan)s END
          AND t.digest = %(digest)s AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > %(now)s)
          AND u.is_active
        RETURNING {returning}"""  # noqa: S608
    if not listing:
        return update
    user, project = (f"call.c{columns.index(c)}" for c in ('u."id"', 't."project_id"'))
    source, order = listed_sql(user=user, project=project)
    first = f" ORDER BY {order} LIMIT 1" if listing == "first" else ""
    # One row per visible project (one with NULL project columns when there is none), in the list's order.
    return f"""WITH call AS ({update})
        SELECT call.*, listed.* FROM call LEFT JOIN LATERAL (
          SELECT {select_list(LISTED)}, row_number() OVER (ORDER BY {order}) AS position {source}{first}
        ) AS listed ON true
        ORDER BY listed.position"""  # noqa: S608


def session_tool_call(*, raw_token: str, session_id: str, listing: Listing = "") -> CountedCall | None:
    """The live session of this token with the tool call counted (and its principal's visible projects, all or the
    first, as `listing` asks), in one statement; None when anything does not match (then nothing was written)."""
    if not session_id or len(session_id) > SESSION_ID_MAX:
        return None
    now = timezone.now()
    params: dict[str, Any] = {"now": now, "sid": session_id, "cutoff": idle_cutoff(now),
                              "orphan": orphan_cutoff(now), "digest": token_digest(raw_token)}
    name = {"": "brain_tool_call", "all": "brain_tool_call_listed", "first": "brain_tool_call_first"}[listing]
    with connection.cursor() as cursor:
        execute_prepared(cursor, name, _statement(listing), params, prefix=relaxed_prefix())
        rows = cursor.fetchall()
    if not rows:
        return None
    width = len(_columns())
    built = instances(rows[0][:width], ALIASES)
    session = built["s"]
    assert isinstance(session, McpSession)
    session.token = token_joined(built)
    if not listing:
        return CountedCall(session)
    listed = tuple(project_listed(row[width:-1]) for row in rows if row[width] is not None)
    return CountedCall(session, listed, listing)
