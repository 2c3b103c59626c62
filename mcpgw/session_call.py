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
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from brain.sql_rows import execute_prepared, instances, relaxed_prefix, select_list
from mcpgw.models import SESSION_ID_MAX, McpSession
from mcpgw.selectors import idle_cutoff
from projects.models import ApiToken, Project, User
from projects.selectors.accounts import token_digest, token_joined

ALIASES: tuple[tuple[str, type[Model]], ...] = (("s", McpSession), ("t", ApiToken), ("u", User), ("p", Project))


@cache
def _statement() -> str:
    returning = select_list(ALIASES)
    s, t, u, p = (model._meta.db_table for _, model in ALIASES)
    # Table and column names come from the models only; every value is a parameter.
    return f"""UPDATE "{s}" AS s SET tool_call_count = s.tool_call_count + 1, last_seen_at = %(now)s
        FROM "{t}" AS t JOIN "{u}" AS u ON u.id = t.user_id LEFT JOIN "{p}" AS p ON p.id = t.project_id
        WHERE s.id = %(sid)s AND s.token_id = t.id AND s.closed_at IS NULL AND s.last_seen_at >= %(cutoff)s
          AND t.digest = %(digest)s AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > %(now)s)
          AND u.is_active
        RETURNING {returning}"""  # noqa: S608


def session_tool_call(*, raw_token: str, session_id: str) -> McpSession | None:
    """The live session of this token with the tool call counted, its `.token` (with `.user` and `.project`)
    loaded; None when anything does not match (then nothing was written)."""
    if not session_id or len(session_id) > SESSION_ID_MAX:
        return None
    now = timezone.now()
    params: dict[str, Any] = {"now": now, "sid": session_id, "cutoff": idle_cutoff(now),
                              "digest": token_digest(raw_token)}
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_tool_call", _statement(), params, prefix=relaxed_prefix())
        row = cursor.fetchone()
    if row is None:
        return None
    built = instances(row, ALIASES)
    session = built["s"]
    assert isinstance(session, McpSession)
    session.token = token_joined(built)
    return session
