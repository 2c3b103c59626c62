"""Each event's place in its session (`SessionEvent.position`, what session search's neighbour scoring joins on):
0 first, one more per event in logging order, on every write path (one event on the one-statement path, a batch,
a bulk ingest across chunks), continuing after what the session already holds; the migration numbers stored
events in their sessions' order. Another tenant's session keeps its own count."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from sessions.models import SessionEvent
from sessions.services.events import (
    INGEST_CHUNK,
    EventDraft,
    session_event_record,
    session_events_ingest,
    session_events_log_many,
    session_start,
)
from sessions.services.open import session_open
from sessions.services.outcome import OutcomeReport, session_report_outcome
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def _positions(session: object) -> list[tuple[int | None, str]]:
    rows = SessionEvent.objects.filter(session=session).order_by("position", "created_at")
    return list(rows.values_list("position", "content"))


@pytest.mark.parametrize("vectors", ["batched", "inline"])
def test_logged_events_take_the_next_positions(tenant_a: Tenant, tenant_b: Tenant, vectors: str) -> None:
    with override_settings(BRAIN_EVENT_VECTORS=vectors):
        mine = session_open(principal=tenant_a.principal, prompt="fix the flaky login test").session
        theirs = session_open(principal=tenant_b.principal, prompt="rename the navbar classes").session
        for n in range(3):
            session_event_record(principal=tenant_a.principal, session_id=str(mine.id), event_type="note",
                                 payload={"text": f"step {n}"})
        event = session_event_record(principal=tenant_b.principal, session_id=str(theirs.id), event_type="note",
                                     payload={"text": "their step"})
    assert event.position == 1  # what the insert returned: after the prompt, not after tenant A's events
    assert _positions(mine) == [(0, "fix the flaky login test"), (1, "step 0"), (2, "step 1"), (3, "step 2")]
    assert _positions(theirs) == [(0, "rename the navbar classes"), (1, "their step")]


def test_a_batch_continues_after_the_session_and_an_ingest_numbers_each_session(tenant_a: Tenant) -> None:
    session = session_start(user=tenant_a.user, project=tenant_a.project, client_type="test")
    session_events_log_many(session=session, drafts=[EventDraft("turn", "a"), EventDraft("turn", "b")])
    session_events_log_many(session=session, drafts=[EventDraft("turn", "c")])
    assert _positions(session) == [(0, "a"), (1, "b"), (2, "c")]
    first = session_start(user=tenant_a.user, project=tenant_a.project, client_type="import")
    second = session_start(user=tenant_a.user, project=tenant_a.project, client_type="import")
    sizes = (INGEST_CHUNK + 2, 2)  # the first session spans two chunks
    session_events_ingest(batches=[(first, [EventDraft("turn", f"one {i}") for i in range(sizes[0])]),
                                   (second, [EventDraft("turn", f"two {i}") for i in range(sizes[1])])])
    assert _positions(first) == [(i, f"one {i}") for i in range(sizes[0])]
    assert _positions(second) == [(0, "two 0"), (1, "two 1")]


def test_learnings_captured_at_the_close_follow_the_session(tenant_a: Tenant) -> None:
    session = session_open(principal=tenant_a.principal, prompt="pin the fixtures").session
    session_event_record(principal=tenant_a.principal, session_id=str(session.id), event_type="note",
                         payload={"text": "the db fixture leaked"})
    learning = {"trigger": "pytest fixtures", "rule": "yield the connection and close it in finally",
                "rationale": "it leaked", "type": "heuristic"}
    session_report_outcome(principal=tenant_a.principal, session_id=str(session.id),
                           report=OutcomeReport(success=True, learnings=[learning]))
    assert [p for p, _ in _positions(session)] == [0, 1, 2]
    assert _positions(session)[-1][1].startswith("pytest fixtures: yield the connection")


def test_the_migration_numbers_stored_events_in_their_sessions_order(tenant_a: Tenant, tenant_b: Tenant,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    now = timezone.now()
    sessions = [session_start(user=t.user, project=t.project, client_type="test") for t in (tenant_a, tenant_b)]
    for session in sessions:  # logged out of time order: the later event first
        session_events_log_many(session=session, drafts=[EventDraft("turn", "late", occurred_at=now),
                                                         EventDraft("turn", "early", occurred_at=now - timedelta(1))])
    SessionEvent.objects.update(position=None)
    migration = importlib.import_module("sessions.migrations.0007_event_position")
    monkeypatch.setattr(migration, "BATCH_SESSIONS", 1)  # one statement a session: the batches join up
    with connection.cursor() as cursor:
        migration.number_events(cursor)
    for session in sessions:
        assert _positions(session) == [(0, "early"), (1, "late")]
