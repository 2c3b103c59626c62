"""Honest credit at close: what the session used is credited, what it was shown and ignored loses a little,
what it rejected loses a lot.

    used      = ids named in knowledgeUsed (full uuid or the short id of the injection), plus injected rows
                whose id (full or short) appears in the session's events or in the close summary
    rejected  = rows named by a `knowledge_rejected` event of the session (knowledgeId, full or short)
    ignored   = rows injected into the session, neither used nor rejected

    success close:  used     -> success_count + 1, confidence + USED_BONUS
    failed close:   used     -> failure_count + 1
    any close:      ignored  -> confidence - IGNORED_PENALTY
                    rejected -> failure_count + 1, confidence - REJECTED_PENALTY
Confidence stays within [0, 1]; every row changes at most once per session; last_used_at moves for used rows.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from django.db import connection
from django.utils import timezone

from brain.sql_rows import partial_instances, prepared_rows
from knowledge.injection import SHORT_ID, short_id
from knowledge.models import KnowledgeItem
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import visible_project_params, visible_project_sql
from sessions.models import ApplicationRole, Session, SessionEvent, SessionKnowledgeApplication

USED_BONUS = 0.05
IGNORED_PENALTY = 0.02
REJECTED_PENALTY = 0.15
_HEX = re.compile(rf"^[0-9a-f]{{{SHORT_ID},32}}$")
_ID_KEYS = ("knowledgeId", "knowledge_id", "id")


@dataclass(frozen=True)
class Credit:
    used: frozenset[uuid.UUID]
    ignored: frozenset[uuid.UUID]
    rejected: frozenset[uuid.UUID]
    reported: frozenset[uuid.UUID] = frozenset()  # named in knowledgeUsed, the caller's own: recorded on the session

    @property
    def changed(self) -> int:
        return len(self.used | self.ignored | self.rejected)


def _resolve(values: Iterable[str], among: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Full uuids as they are; short ids (>= 8 hex characters) when exactly one of `among` starts with them."""
    out: set[uuid.UUID] = set()
    for value in values:
        text = str(value).strip().lower()
        try:
            out.add(uuid.UUID(text))
            continue
        except ValueError:
            pass
        if _HEX.match(text.replace("-", "")):
            matches = [kid for kid in among if kid.hex.startswith(text.replace("-", ""))]
            if len(matches) == 1:
                out.add(matches[0])
    return out


@cache
def _owned_statement() -> str:
    knowledge, project = KnowledgeItem._meta.db_table, Project._meta.db_table
    # projects_visible's scope, written once; names come from the models, values are parameters.
    return f"""SELECT k.id FROM "{knowledge}" AS k LEFT JOIN "{project}" AS p ON p.id = k.project_id
        WHERE k.id = ANY(%(ids)s::uuid[]) AND k.owner_id = %(user)s
          AND (k.project_id IS NULL OR {visible_project_sql("p")})"""  # noqa: S608


def _owned(principal: Principal, ids: set[uuid.UUID]) -> set[uuid.UUID]:
    """The caller's own rows among `ids`, project-less or in a project it sees: one statement prepared per
    connection (the ORM's version rebuilt the visible-projects subquery on every close)."""
    if not ids:  # nothing reported: no query to build
        return set()
    params = {**visible_project_params(principal), "ids": list(ids)}
    return {row[0] for row in prepared_rows("brain_credit_owned", _owned_statement(), params)}


_EVENT_READ = ("id", "event_type", "content", "payload", "position")


@cache
def _events_statement() -> str:
    column = {f.attname: f.column for f in SessionEvent._meta.concrete_fields}
    columns = ", ".join(f'e."{column[name]}"' for name in _EVENT_READ)
    table = SessionEvent._meta.db_table
    return (f'SELECT {columns} FROM "{table}" AS e WHERE e.session_id = %(session)s '  # noqa: S608
            "ORDER BY e.occurred_at, e.created_at")


def session_events_read(session: Session) -> list[SessionEvent]:
    """The session's events, read once for the whole close (credit, the error count, the next position): the
    fields the close reads, by one statement prepared per connection."""
    rows = prepared_rows("brain_close_events", _events_statement(), {"session": session.id})
    return cast("list[SessionEvent]", partial_instances(rows, SessionEvent, _EVENT_READ))


def _mentioned(events: Sequence[SessionEvent], summary: str, injected: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    texts = (f"{e.content} {json.dumps(e.payload, default=str)}" for e in events
             if e.event_type != "knowledge_rejected")
    text = " ".join([summary, *texts]).lower()
    return {kid for kid in injected if str(kid) in text or short_id(kid) in text}


def _rejected(events: Sequence[SessionEvent], injected: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    named = [str(e.payload.get(key)) for e in events if e.event_type == "knowledge_rejected"
             if isinstance(e.payload, dict) for key in _ID_KEYS if e.payload.get(key)]
    return _resolve(named, injected)


def credit_plan(
    *, principal: Principal, session: Session, used_ids: Sequence[str], summary: str,
    events: Sequence[SessionEvent] | None = None,
) -> Credit:
    """Who gets what. `events`: the session's events when the caller has read them already."""
    events = session_events_read(session) if events is None else events
    rows = prepared_rows("brain_credit_injected", _injected_statement(), {"session": session.id})
    injected = [row[0] for row in rows]
    reported = _owned(principal, _resolve(used_ids, injected))
    rejected = _rejected(events, injected) - reported
    used = (reported | _mentioned(events, summary, injected)) - rejected
    ignored = set(injected) - used - rejected
    return Credit(frozenset(used), frozenset(ignored), frozenset(rejected), frozenset(reported))


@cache
def _injected_statement() -> str:
    table = SessionKnowledgeApplication._meta.db_table
    return (f'SELECT a.knowledge_id FROM "{table}" AS a WHERE a.session_id = %(session)s '  # noqa: S608
            f"AND a.role = '{ApplicationRole.INJECTED.value}'")


# One statement for the whole credit: the reported rows recorded on the session (with the outcome: a row inserted
# by a CTE is not seen by the statement's other parts) and the session's other applications given the outcome; the
# rows locked in id order (two closes crediting the same rows would otherwise lock them in whatever order each
# UPDATE met them and could deadlock, as seen in `brain bench cluster`; NO KEY UPDATE, as the UPDATE takes anyway,
# leaves other transactions' foreign-key checks free), then each row changed by its part of the plan. It returns
# each row's skill stage for the promotion that follows.
_CREDIT_SQL = """
WITH recorded AS (
  INSERT INTO "{applications}" (id, created_at, updated_at, session_id, knowledge_id, role, outcome)
  SELECT gen_random_uuid(), %(now)s, %(now)s, %(session)s, r.id, '{reported_role}', %(ok)s
  FROM unnest(%(reported)s::uuid[]) AS r(id) ON CONFLICT DO NOTHING),
outcomes AS (UPDATE "{applications}" SET outcome = %(ok)s WHERE session_id = %(session)s)
UPDATE "{table}" k SET
  success_count = k.success_count + (CASE WHEN k.id = ANY(%(used)s) AND %(ok)s THEN 1 ELSE 0 END),
  failure_count = k.failure_count
    + (CASE WHEN (k.id = ANY(%(used)s) AND NOT %(ok)s) OR k.id = ANY(%(rejected)s) THEN 1 ELSE 0 END),
  confidence = CASE
    WHEN k.id = ANY(%(used)s) AND %(ok)s THEN least(greatest(k.confidence + %(bonus)s, 0), 1)
    WHEN k.id = ANY(%(ignored)s) THEN least(greatest(k.confidence - %(ignored_penalty)s, 0), 1)
    WHEN k.id = ANY(%(rejected)s) THEN least(greatest(k.confidence - %(rejected_penalty)s, 0), 1)
    ELSE k.confidence END,
  last_used_at = CASE WHEN k.id = ANY(%(used)s) THEN %(now)s ELSE k.last_used_at END
FROM (SELECT id FROM "{table}" WHERE id = ANY(%(touched)s) ORDER BY id FOR NO KEY UPDATE) AS locked
WHERE k.id = locked.id
RETURNING k.id, k.stage, k.deleted_at IS NULL"""


def credit_apply(*, session: Session, credit: Credit, ok: bool) -> dict[uuid.UUID, str]:
    """Applies the plan (see the module docstring) in one statement: the reported rows recorded on the session,
    the session's applications given the outcome, the rows their credit. Returns the skill stage of each
    credited row still live (not deleted)."""
    touched = credit.used | credit.ignored | credit.rejected
    params: dict[str, Any] = {
        "used": list(credit.used), "ignored": list(credit.ignored), "rejected": list(credit.rejected),
        "touched": sorted(touched), "ok": ok, "now": timezone.now(), "bonus": USED_BONUS,
        "ignored_penalty": IGNORED_PENALTY, "rejected_penalty": REJECTED_PENALTY, "session": session.id,
        "reported": sorted(credit.reported)}
    with connection.cursor() as cursor:
        cursor.execute(_CREDIT_SQL.format(table=KnowledgeItem._meta.db_table,
                                          applications=SessionKnowledgeApplication._meta.db_table,
                                          reported_role=ApplicationRole.USED_REPORTED.value), params)
        return {row[0]: row[1] for row in cursor.fetchall() if row[2]}
