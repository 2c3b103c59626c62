"""Bulk ingest (`session_events_ingest`, behind `brain bench retrieval`): events of many sessions stored in order,
all or nothing, each with the vector its text gets alone, embedded a chunk ahead of the inserts on a helper thread.
A second tenant's search never sees them."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import IntegrityError

from knowledge.embeddings import embed_query
from sessions import services
from sessions.models import Session, SessionEvent
from sessions.selectors.search import session_search
from sessions.services.events import INGEST_CHUNK, EventDraft, session_events_ingest, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def _drafts(prefix: str, n: int) -> list[EventDraft]:
    return [EventDraft("turn", f"{prefix} note {i}: the deploy of service {i} needs flag {i * 7}", {"turn": i})
            for i in range(n)]


def test_events_land_in_order_with_their_own_vectors_across_chunks(tenant_a: Tenant, tenant_b: Tenant,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    embed = services.events.embed_or_none

    def watched(texts: list[str], *, op: str) -> tuple[list[list[float]] | None, str]:
        threads.append(threading.current_thread().name)
        return embed(texts, op=op)

    monkeypatch.setattr(services.events, "embed_or_none", watched)
    first = session_start(user=tenant_a.user, project=tenant_a.project, client_type="import")
    second = session_start(user=tenant_a.user, project=tenant_a.project, client_type="import")
    sizes = (INGEST_CHUNK + 5, 3)  # the first session spans two chunks, the second shares the last one
    out = session_events_ingest(batches=[(first, _drafts("alpha", sizes[0])), (second, _drafts("beta", sizes[1]))])
    assert [len(events) for events in out] == list(sizes)
    assert len(threads) == 2 and all(name.startswith("ingest-embed") for name in threads)
    stored = list(SessionEvent.objects.filter(session=first).order_by("created_at", "id"))
    assert {e.payload["turn"] for e in stored} == set(range(sizes[0]))
    probe = out[0][INGEST_CHUNK + 1]  # a row of the second chunk
    row = SessionEvent.objects.get(pk=probe.pk)
    assert row.embedding is not None and row.embedding_model
    assert list(row.embedding) == pytest.approx(embed_query(row.content)[0], abs=1e-5)
    found = session_search(principal=tenant_a.principal, query="beta note 2 deploy", limit=3,
                           project_id=tenant_a.project.id, mode="vector")
    assert found.events and found.events[0].snippet.startswith("beta note 2")
    assert not session_search(principal=tenant_b.principal, query="beta note 2 deploy", limit=3, mode="hybrid").events


@pytest.mark.django_db(transaction=True)  # the ingest's own transaction commits, so the deferred FK check runs
def test_a_failing_chunk_leaves_nothing_of_the_ingest(tenant_a: Tenant) -> None:
    real = session_start(user=tenant_a.user, project=tenant_a.project, client_type="import")
    ghost = Session(id=uuid.uuid4(), user=tenant_a.user, project=tenant_a.project)  # never stored
    with pytest.raises(IntegrityError):
        session_events_ingest(batches=[(real, _drafts("kept", INGEST_CHUNK + 2)), (ghost, _drafts("lost", 2))])
    assert not SessionEvent.objects.filter(session=real).exists()
