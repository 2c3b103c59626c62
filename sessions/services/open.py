"""Opening a session: the project in the spec's precedence, inject-at-open and the caller's open action items."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from brain.logs import log_op
from brain.sql_rows import execute_prepared, failure_contained, instances, prepared_rows, select_list
from brain.text import text_storable
from brain.thread_pools import process_pool
from knowledge.embeddings import memoised
from knowledge.injection import Injectable, Injection, build_injection
from knowledge.models import REVIEW_HELD, KnowledgeItem, KnowledgeType
from knowledge.relevance import NO_MATCH, above_floor, other_stack
from knowledge.selectors.search import KnowledgeHit, KnowledgeSearchResult, injection_budget, knowledge_search
from knowledge.services.knowledge_vectors import knowledge_vectors_now
from knowledge.stored_text import render_action_items
from projects.models import STACK_NAME_MAX, Project
from projects.scope import Principal
from projects.services.resolve import project_resolve
from sessions.models import CLIENT_TYPE_MAX, ApplicationRole, Session, SessionKnowledgeApplication
from sessions.services.event_vectors import event_vectors_deferred
from sessions.services.events import SessionDraft, session_draft, session_insert

logger = logging.getLogger(__name__)
INJECT_TOP = 5
ACTION_ITEMS_MAX = 10
# Threads that store opened sessions beside their searches (`_stored_beside`), each with its database connection:
# a web process holds up to this many more connections. A store takes under a millisecond of a search's five or
# more, so four keep up with a process's eight request threads.
STORE_THREADS = 4


@dataclass(frozen=True)
class SessionOpened:
    session: Session
    project_source: str
    relevant_knowledge: Injection | None
    open_action_items: Injection | None
    injection_notice: str = ""  # why nothing or less was injected (the relevance floor), for the agent


def as_injectable(hits: Sequence[KnowledgeHit]) -> Sequence[Injectable]:
    # KnowledgeHit satisfies Injectable except that its id is typed UUID where the protocol says object.
    return cast("Sequence[Injectable]", hits)


@cache
def _applications_statement() -> str:
    """One INSERT of every id of a list, written once from the model's metadata; the ORM's `bulk_create` of 20 rows
    cost 1.6 ms where this statement takes 0.7 (docs/benchmarks.md, twentieth pass)."""
    table = SessionKnowledgeApplication._meta.db_table
    # The table name comes from the model; every value is a parameter.
    return (f'INSERT INTO "{table}" (id, created_at, updated_at, session_id, knowledge_id, role, outcome) '  # noqa: S608
            "SELECT gen_random_uuid(), %(now)s, %(now)s, %(session)s, k, %(role)s, NULL "
            "FROM unnest(%(ids)s::uuid[]) AS k ON CONFLICT DO NOTHING")


def applications_record(*, session: Session, knowledge_ids: Sequence[uuid.UUID | str], role: str) -> None:
    """Records that these rows reached the session in `role`; a repeat records nothing twice."""
    if not knowledge_ids:
        return
    params = {"now": timezone.now(), "session": session.pk, "role": role, "ids": [str(k) for k in knowledge_ids]}
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_applications_record", _applications_statement(), params)


def _other_stack(prompt: str, framework: str, hits: Sequence[KnowledgeHit]) -> set[str]:
    return other_stack(prompt=prompt, framework=framework, frameworks={str(h.id): h.framework for h in hits})


@dataclass(frozen=True)
class Retrieved:
    found: KnowledgeSearchResult
    injection: Injection


# Retrievals whose scores include the query's vector: only they rank a row by its own vector.
_WITH_VECTORS = frozenset({"hybrid", "vector"})


def _search_embedded(**search: Any) -> KnowledgeSearchResult:
    """`knowledge_search`, run again when one of its hits was written so recently that the batcher has not embedded it
    yet: such a row is scored on its words alone, under the relevance floor even when it fits the task word for word
    (a rule taught just before the open). Its vector is computed here, stored, and the search sees it."""
    found = knowledge_search(**search)
    waiting = [hit.id for hit in found.hits if hit.vector_pending]
    if not waiting or found.retrieval not in _WITH_VECTORS or not knowledge_vectors_now(waiting):
        return found
    log_op(logger, "retrieval.vectors_caught_up", count=len(waiting))
    return knowledge_search(**search)


def knowledge_inject(
    *, principal: Principal, prompt: str, project_id: uuid.UUID | None, session: Session | None = None,
    limit: int = INJECT_TOP, framework: str = "", language: str = "", budget_tokens: int | None = None,
    explain: bool = False, project: Project | None = None,
) -> Retrieved:
    """The top rows for `prompt` (in one project when given), rendered within the token budget and, with a
    session, recorded on it as injected. `project`: one just resolved as visible, in place of `project_id`."""
    found = _search_embedded(principal=principal, query=prompt, limit=limit, project_id=project_id,
                             framework=framework, language=language, explain=explain, project=project)
    budget = budget_tokens or injection_budget()
    kept, floored = above_floor(found.hits, excluded=_other_stack(prompt, framework, found.hits))
    injection = build_injection(as_injectable(kept), budget=budget)
    injection.notice = " ".join(n for n in (floored.notice(), injection.notice) if n)
    if session is not None:
        applications_record(session=session, knowledge_ids=injection.ids, role=ApplicationRole.INJECTED)
    return Retrieved(found=found, injection=injection)


_ITEM = (("k", KnowledgeItem),)


@cache
def _action_items_statement() -> str:
    """Open action items of a project assigned to one address, blockers first, then oldest; written once from the
    model's metadata (the ORM rebuilt this query on every open, five times what running it cost)."""
    held = ", ".join(f"'{status}'" for status in REVIEW_HELD)
    return f"""SELECT {select_list(_ITEM)} FROM "{KnowledgeItem._meta.db_table}" AS k
        WHERE k.project_id = %(project)s AND k.type = '{KnowledgeType.ACTION_ITEM.value}' AND k.deleted_at IS NULL
          AND k.superseded_by_id IS NULL AND k.tags @> ARRAY[%(tag)s]::varchar[] AND k.review_status NOT IN ({held})
        ORDER BY CASE WHEN k.tags @> ARRAY['blocker']::varchar[] THEN 0 ELSE 1 END, k.created_at, k.id
        LIMIT {ACTION_ITEMS_MAX}"""  # noqa: S608 - names and constants from the code; values are parameters


def action_items_open(*, project: Project, email: str) -> list[KnowledgeItem]:
    """Open action items of `project` assigned to `email` (by its for: tag), blockers first, then oldest: one
    statement prepared per connection."""
    params = {"project": project.id, "tag": f"for:{email.strip().lower()}"}
    rows = prepared_rows("brain_action_items_open", _action_items_statement(), params)
    return [cast("KnowledgeItem", instances(row, _ITEM)["k"]) for row in rows]


def _action_items_injection(session: Session, email: str) -> Injection | None:
    items = action_items_open(project=session.project, email=email)
    if not items:
        return None
    return Injection(text=render_action_items(items), ids=[str(i.id) for i in items])


def _soft(op: str, build: object, context: dict[str, Any]) -> Injection | None:
    """Runs one optional part of the open; any failure is logged (with `context`) and the part is left out."""
    try:
        with failure_contained():
            return build()  # type: ignore[operator, no-any-return]
    except Exception as exc:  # opening a session must never fail on retrieval
        log_op(logger, op, level=logging.WARNING, **context, error=type(exc).__name__, reason=str(exc)[:200])
        return None


def _draft(principal: Principal, project: Project, client_type: str, prompt: str, framework: str, *,
           defer_vectors: bool) -> SessionDraft:
    return session_draft(user=principal.user, project=project, client_type=client_type[:CLIENT_TYPE_MAX],
                         prompt=prompt, framework=framework[:STACK_NAME_MAX], defer_vectors=defer_vectors)


def _stored(draft: SessionDraft, email: str, with_rows: Sequence[SessionKnowledgeApplication] = ()
            ) -> tuple[Session, Injection | None]:
    """The session, its prompt event and `with_rows` in one statement, then the owner's open action items."""
    session = session_insert(draft, with_rows=with_rows)  # knowledge rows are never deleted outright
    return session, _soft("start.action_items_failed", lambda: _action_items_injection(session, email),
                          {"session": str(session.id)[:8]})


def _stored_by_thread(draft: SessionDraft, email: str) -> tuple[Session, Injection | None]:
    """`_stored` on a store thread's own connection, handled as a request's is: checked before (its age; a health
    check, off the open's path) and let go after once older than `BRAIN_DB_CONN_MAX_AGE` (0, behind a pooler: after
    every store), so an idle process holds no more connections than its requests' settings allow."""
    close_old_connections()
    try:
        return _stored(draft, email)
    except DatabaseError:
        connection.close()  # this thread's own connection: a broken one is not kept for the next open
        raise
    finally:
        close_old_connections()


def _stored_after(principal: Principal, project: Project, client_type: str, prompt: str, framework: str,
                  relevant: Injection | None) -> tuple[Session, Injection | None]:
    """`_stored` after the search, with the record of what was injected in the same statement."""
    # The prompt event is stored without its vector and the batcher stores it after the commit, from the memo the
    # search filled: inserting a vector means inserting into the events' HNSW graph, 1-4 ms of the open that
    # nobody needs to wait for. Inline (BRAIN_EVENT_VECTORS=inline) it goes in with the row when memoised.
    defer = event_vectors_deferred() or not memoised(prompt)
    draft = _draft(principal, project, client_type, prompt, framework, defer_vectors=defer)
    injected = [SessionKnowledgeApplication(session=draft.session, knowledge_id=kid, role=ApplicationRole.INJECTED)
                for kid in _injected(relevant)]
    return _stored(draft, principal.user.email, injected)


def _stored_beside(prompt: str) -> bool:
    """Whether an open stores its session on a store thread while it searches (`session_open`): with a prompt to
    search for, the prompt's vector left to the batcher, outside any transaction (another connection would not
    see the caller's writes, nor the caller its own), and not switched off (`BRAIN_OPEN_STORE_BESIDE`)."""
    return (bool(prompt.strip()) and settings.BRAIN_OPEN_STORE_BESIDE and event_vectors_deferred()
            and not connection.in_atomic_block)


def _injected(relevant: Injection | None) -> list[str]:
    return list(dict.fromkeys(relevant.ids if relevant is not None else ()))


def session_open(
    *, principal: Principal, client_type: str = "", prompt: str = "", framework: str = "", language: str = "",
    project_id: str | None = None, project_name: str | None = None,
) -> SessionOpened:
    """Opens a session in the resolved project; with a prompt, injects the best knowledge in the same call.

    With a prompt, a store thread stores the session and its prompt event on its own connection, and reads the
    open action items, while this thread searches (`_stored_beside`); the record of what was injected follows in
    one INSERT. Otherwise, or inside a transaction, the search runs first and the session, its prompt event and the
    record are one INSERT statement: one round trip and one flush to disk. The prompt's vector follows from the
    batcher, which takes the one the search computed."""
    text_storable(clientType=client_type, prompt=prompt, framework=framework, language=language,
                  projectId=project_id, projectName=project_name)
    resolved = project_resolve(principal=principal, project_id=project_id, project_name=project_name,
                               framework=framework or None, language=language or None)
    storing = process_pool("open-store", STORE_THREADS).submit(
        _stored_by_thread, _draft(principal, resolved.project, client_type, prompt, framework, defer_vectors=True),
        principal.user.email) if _stored_beside(prompt) else None
    relevant, notice = None, ""
    if prompt.strip():
        relevant = _soft("start.inject_failed", lambda: knowledge_inject(
            principal=principal, prompt=prompt, project_id=None, project=resolved.project, framework=framework,
            language=language).injection, {"project": str(resolved.project.pk)[:8]})
        notice = (relevant.notice or (NO_MATCH if not relevant.ids else "")) if relevant is not None else ""
        if relevant is not None and not relevant.ids:
            relevant = None
    if storing is not None:
        session, items = storing.result()
        applications_record(session=session, knowledge_ids=_injected(relevant), role=ApplicationRole.INJECTED)
    else:
        session, items = _stored_after(principal, resolved.project, client_type, prompt, framework, relevant)
    log_op(logger, "session.open", session=str(session.id)[:8], source=resolved.source,
           injected=len(relevant.ids) if relevant else 0,
           actionItems=len(items.ids) if items else 0, floored=bool(notice))
    return SessionOpened(session, resolved.source, relevant, items, notice)
