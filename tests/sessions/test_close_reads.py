"""The close's own reads, written as prepared statements: they must load what the ORM loads."""

from __future__ import annotations

import pytest

from sessions.models import SessionEvent
from sessions.services.credit import session_events_read
from sessions.services.events import session_event_record
from sessions.services.open import session_open
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def test_the_close_reads_each_event_as_the_orm_does(tenant_a: Tenant, tenant_b: Tenant) -> None:
    session = session_open(principal=tenant_a.principal, prompt="move the settings to pydantic").session
    for kind, payload in (("knowledge_rejected", {"knowledgeId": "0123abcd", "reason": "we use spaces"}),
                          ("error", {"message": "pytest failed", "nested": {"n": [1, 2]}}), ("note", {})):
        session_event_record(principal=tenant_a.principal, session_id=str(session.id), event_type=kind,
                             payload=payload)
    theirs = session_open(principal=tenant_b.principal, prompt="move the settings to pydantic").session
    session_event_record(principal=tenant_b.principal, session_id=str(theirs.id), event_type="note", payload={})
    fields = ("id", "event_type", "content", "payload", "position")
    read = session_events_read(session)
    orm = SessionEvent.objects.filter(session=session).only(*fields)
    assert [tuple(getattr(e, f) for f in fields) for e in read] == [tuple(getattr(e, f) for f in fields) for e in orm]
    assert [e.event_type for e in read] == ["prompt", "knowledge_rejected", "error", "note"]
    assert read[2].payload == {"message": "pytest failed", "nested": {"n": [1, 2]}}
    assert [e.position for e in read] == [0, 1, 2, 3]
    assert all(e.get_deferred_fields() >= {"embedding", "session_id"} for e in read)  # nothing more was loaded
    assert [e.event_type for e in session_events_read(theirs)] == ["prompt", "note"]
