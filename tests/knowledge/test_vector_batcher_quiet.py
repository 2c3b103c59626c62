"""A vector batcher runs between its process's requests: a gathered batch waits while requests are in flight, for
at most its bound, and a full batch (a backlog) never waits."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from brain.request_activity import REQUESTS
from knowledge.embeddings import embed_texts
from knowledge.services.vector_batcher import BATCH_MAX, VectorBatcher
from sessions.models import SessionEvent
from sessions.services.event_vectors import EVENTS
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)  # the batcher's thread reads committed rows
# Longer than a warm model takes for a few short texts by orders of magnitude: a batch that did not wait for the
# request would have its vectors stored by then.
SETTLE_S = 0.5


def _unembedded(tenant: Tenant, count: int) -> list[int]:
    session = session_start(user=tenant.user, project=tenant.project)
    drafts = [EventDraft(event_type="note", content=f"retry the flaky upload step {n}") for n in range(count)]
    ids = [row.pk for row in session_events_log_many(session=session, drafts=drafts)]
    SessionEvent.objects.filter(pk__in=ids).update(embedding=None, embedding_model="")
    return ids


def _missing(ids: list[int]) -> int:
    return SessionEvent.objects.filter(pk__in=ids, embedding__isnull=True).count()


@pytest.fixture
def request_in_flight() -> Iterator[None]:
    embed_texts(["a warm model"], background=True)  # loading it must not pass for waiting
    REQUESTS.begin()
    try:
        yield
    finally:
        REQUESTS.end()


def _stored_after_the_request(batcher: VectorBatcher) -> None:
    """Ends the fixture's request, waits for the batcher, and starts one again for the fixture to end."""
    REQUESTS.end()
    try:
        assert batcher.flush(timeout=60)
    finally:
        REQUESTS.begin()


def _taken(batcher: VectorBatcher) -> None:
    deadline = time.monotonic() + 60
    while batcher._ids.queue.qsize() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(SETTLE_S)


def test_a_batch_waits_while_a_request_runs_and_goes_once_it_ends(request_in_flight, tenant_a, tenant_b) -> None:
    ids = _unembedded(tenant_a, 2)
    batcher = VectorBatcher(EVENTS, quiet_wait=60.0)
    batcher.submit(ids)
    _taken(batcher)
    assert _missing(ids) == 2
    _stored_after_the_request(batcher)
    assert _missing(ids) == 0
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_a_batch_waits_no_longer_than_its_bound(request_in_flight, tenant_a, tenant_b) -> None:
    ids = _unembedded(tenant_a, 2)
    batcher = VectorBatcher(EVENTS, quiet_wait=0.05)
    batcher.submit(ids)
    assert batcher.flush(timeout=60)  # the request is still running
    assert _missing(ids) == 0
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_a_full_batch_does_not_wait_for_the_requests(request_in_flight, tenant_a, tenant_b) -> None:
    ids = _unembedded(tenant_a, BATCH_MAX + 1)
    batcher = VectorBatcher(EVENTS, quiet_wait=60.0)
    batcher.submit(ids)
    deadline = time.monotonic() + 60
    while _missing(ids) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _missing(ids[:BATCH_MAX]) == 0  # the first batch was full: stored while the request runs
    _taken(batcher)
    assert _missing(ids[BATCH_MAX:]) == 1  # the one after it waits
    _stored_after_the_request(batcher)
    assert _missing(ids) == 0
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()

