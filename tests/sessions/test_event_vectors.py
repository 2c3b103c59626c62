"""Logged events commit at once with their full-text; their vectors follow from the batcher's thread, and
events whose vector never came (crash, full queue) are embedded by the backfill task."""

from __future__ import annotations

import os
import queue
import threading

import numpy as np
import pytest
from django.db import connection, transaction
from django.test import Client

from knowledge.embeddings import (
    BACKGROUND_NICE,
    DIMENSIONS,
    _memo_put,
    embed_query,
    embed_texts,
    get_embedder,
    memo_clear,
    memoised,
)
from knowledge.services.vector_batcher import VectorBatcher
from knowledge.services.vector_store import rows_without_vectors, vectors_store
from sessions.models import SessionEvent
from sessions.services.event_vectors import EVENT_BATCHER, EVENTS, event_vectors_backfill
from sessions.services.open import session_open
from sessions.tasks import embed_pending_events
from tests.mcpgw.conftest import Mcp, call_tool

pytestmark = pytest.mark.django_db(transaction=True)  # the batcher runs after commit, in its own thread


def _log(mcp: Mcp, sid: str, text: str) -> str:
    result = call_tool(mcp, "brain_log_event", {"sessionId": sid, "eventType": "note", "payload": {"text": text}})
    assert result["structuredContent"]["accepted"] is True
    return result["structuredContent"]["id"]


def test_logged_events_are_searchable_at_once_and_get_vectors_soon(client: Client, tenant_a, tenant_b) -> None:
    mcp_a, mcp_b = Mcp(client, tenant_a.user_raw), Mcp(client, tenant_b.user_raw)
    sid = call_tool(mcp_a, "brain_start_session", {})["structuredContent"]["sessionId"]
    ids = [_log(mcp_a, sid, f"the flaky websocket reconnect test number {n}") for n in range(5)]
    assert SessionEvent.objects.filter(pk__in=ids).count() == 5  # acknowledged means stored
    found = call_tool(mcp_a, "brain_session_search", {"query": "flaky websocket reconnect"})["structuredContent"]
    assert [s["sessionId"] for s in found["sessions"]] == [sid]
    assert EVENT_BATCHER.flush(timeout=60)
    rows = SessionEvent.objects.filter(pk__in=ids)
    assert all(row.embedding is not None and row.embedding_model for row in rows)
    assert call_tool(mcp_b, "brain_session_search", {"query": "flaky websocket reconnect"})[
        "structuredContent"]["sessions"] == []


def test_events_without_vectors_are_backfilled(client: Client, tenant_a) -> None:
    mcp = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp, "brain_start_session", {})["structuredContent"]["sessionId"]
    ids = [_log(mcp, sid, f"deploy failed on step {n}") for n in range(3)]
    assert EVENT_BATCHER.flush(timeout=60)
    # As if the process had died before its batcher ran: the rows are there, their vectors are not.
    SessionEvent.objects.filter(pk__in=ids).update(embedding=None, embedding_model="")
    assert embed_pending_events() >= 3
    assert not SessionEvent.objects.filter(pk__in=ids, embedding__isnull=True).exists()
    assert event_vectors_backfill() == 0  # idempotent: nothing left to do


def test_a_full_queue_drops_ids_and_the_backfill_catches_up(client: Client, tenant_a, caplog) -> None:
    mcp = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp, "brain_start_session", {})["structuredContent"]["sessionId"]
    ids = [_log(mcp, sid, f"note {n} about retries") for n in range(4)]
    assert EVENT_BATCHER.flush(timeout=60)
    SessionEvent.objects.filter(pk__in=ids).update(embedding=None, embedding_model="")
    stalled = VectorBatcher(EVENTS, queue_max=1)
    stalled._ids.queue, stalled._ids.pid = queue.Queue(maxsize=1), os.getpid()  # a thread that never drains it
    stalled.submit(ids)
    assert stalled._ids.queue.qsize() == 1
    assert "op=vectors.queue_full" in caplog.text
    assert event_vectors_backfill() == 4
    assert not SessionEvent.objects.filter(pk__in=ids, embedding__isnull=True).exists()


def test_the_batcher_embeds_below_the_requests_priority_with_the_same_vectors(client: Client, tenant_a,
                                                                                tenant_b) -> None:
    mcp = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp, "brain_start_session", {})["structuredContent"]["sessionId"]
    text = "the migration locked the orders table for eleven minutes"
    event_id = _log(mcp, sid, text)
    assert EVENT_BATCHER.flush(timeout=60)
    batcher = next(t for t in threading.enumerate() if t.name == f"vectors-{EVENTS.label}")
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert os.getpriority(os.PRIO_PROCESS, batcher.native_id) == mine + BACKGROUND_NICE
    # The model runs on the background embedder's own threads (one per core), lowered the same way.
    runners = [t for t in threading.enumerate() if t.name.startswith("embed-background")]
    assert runners and {os.getpriority(os.PRIO_PROCESS, t.native_id) for t in runners} == {mine + BACKGROUND_NICE}
    # The background embedder is its own object; the vector it stored is the one a request would compute.
    assert get_embedder(background=True) is not get_embedder()
    stored = SessionEvent.objects.get(pk=event_id)
    vector, model = embed_query(text)
    assert stored.embedding_model == model
    assert np.allclose(np.array(stored.embedding), np.array(vector), atol=1e-5)
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_the_batchers_database_backend_stores_vectors_below_the_requests_priority(client: Client, tenant_a,
                                                                                  tenant_b) -> None:
    """The UPDATE that stores a batch (and inserts into the HNSW graph) is the server's CPU: on a server of this
    machine, the batcher's backend runs at the batcher's lowered priority; a request's backend keeps its own."""
    mcp = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp, "brain_start_session", {})["structuredContent"]["sessionId"]
    _log(mcp, sid, "the nightly export timed out after the index rebuild")
    assert EVENT_BATCHER.flush(timeout=60)
    store = f'UPDATE "{SessionEvent._meta.db_table}" AS t%SET embedding%'  # the store's statement, not the ORM's
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() AND query LIKE %s", [store])
        storers = [pid for (pid,) in cursor.fetchall()]
        cursor.execute("SELECT pg_backend_pid()")
        (mine,) = cursor.fetchone()
    base = os.getpriority(os.PRIO_PROCESS, 0)  # the server was started by this process: its backends begin here
    assert storers, "the batcher's backend stored the vector"
    assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in storers} == {max(base, BACKGROUND_NICE)}
    assert os.getpriority(os.PRIO_PROCESS, mine) == base
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_a_batch_of_vectors_is_stored_exactly_on_its_own_rows(client: Client, tenant_a, tenant_b) -> None:
    mcp_a, mcp_b = Mcp(client, tenant_a.user_raw), Mcp(client, tenant_b.user_raw)
    sid_a = call_tool(mcp_a, "brain_start_session", {})["structuredContent"]["sessionId"]
    sid_b = call_tool(mcp_b, "brain_start_session", {})["structuredContent"]["sessionId"]
    ids = [_log(mcp_a, sid_a, f"cache warmed in {n} seconds") for n in range(3)]
    other = _log(mcp_b, sid_b, "cache warmed in 0 seconds")
    assert EVENT_BATCHER.flush(timeout=60)
    SessionEvent.objects.filter(pk__in=[*ids, other]).update(embedding=None, embedding_model="")
    pending = rows_without_vectors(EVENTS, ids)
    assert sorted((str(row.pk), row.text) for row in pending) == sorted(
        (pk, f"cache warmed in {n} seconds") for n, pk in enumerate(ids))
    dims = SessionEvent._meta.get_field("embedding").dimensions  # type: ignore[union-attr]
    vectors = np.random.default_rng(3).standard_normal((3, dims)).astype(np.float32)
    assert vectors_store(EVENTS, pending, vectors.tolist(), "test-model") == 3
    for row, vector in zip(pending, vectors, strict=True):
        stored = SessionEvent.objects.get(pk=row.pk)
        assert stored.embedding_model == "test-model"
        assert np.array_equal(np.asarray(stored.embedding, dtype=np.float32), vector)  # the float32s, exactly
    assert rows_without_vectors(EVENTS, ids) == [] and vectors_store(EVENTS, [], [], "test-model") == 0
    untouched = SessionEvent.objects.get(pk=other)
    assert untouched.embedding is None and untouched.embedding_model == ""


def _synchronous_commit() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def test_a_vectors_relaxed_commit_leaves_other_writes_durable(client: Client, tenant_a, tenant_b) -> None:
    """On its own the vectors' UPDATE commits without waiting for the WAL flush (the backfill redoes a lost one);
    the setting ends with it, and inside a caller's transaction it is not taken at all."""
    mcp_a = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp_a, "brain_start_session", {})["structuredContent"]["sessionId"]
    ids = [_log(mcp_a, sid, f"index rebuilt in {n} minutes") for n in range(2)]
    assert EVENT_BATCHER.flush(timeout=60)
    SessionEvent.objects.filter(pk__in=ids).update(embedding=None, embedding_model="")
    vectors = np.eye(2, DIMENSIONS, dtype=np.float32)
    pending = sorted(rows_without_vectors(EVENTS, ids), key=lambda row: ids.index(str(row.pk)))
    assert vectors_store(EVENTS, pending[:1], vectors[:1].tolist(), "test-model") == 1
    assert _synchronous_commit() == "on"
    with transaction.atomic():
        assert vectors_store(EVENTS, pending[1:], vectors[1:].tolist(), "test-model") == 1
        assert _synchronous_commit() == "on"  # the caller's other writes keep their durable commit
    assert set(SessionEvent.objects.filter(pk__in=ids).values_list("embedding_model", flat=True)) == {"test-model"}
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_an_open_stores_its_prompt_without_the_vector_and_the_batcher_adds_the_searchs(tenant_a, tenant_b) -> None:
    prompt = "tune the connection pool of the reporting service"
    with transaction.atomic():  # the batcher only hears of the row once this commits
        opened = session_open(principal=tenant_a.principal, prompt=prompt)
        assert memoised(prompt)  # the open's search embedded it
        event = SessionEvent.objects.get(session=opened.session, event_type="prompt")
        assert event.embedding is None  # the request did not insert into the vector index
    assert EVENT_BATCHER.flush(timeout=60)
    event.refresh_from_db()
    searched, model = embed_query(prompt)
    assert event.embedding_model == model
    assert np.array_equal(np.asarray(event.embedding, dtype=np.float32), np.asarray(searched, dtype=np.float32))
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_the_batchers_take_a_vector_a_request_already_computed(tenant_a, tenant_b) -> None:
    memo_clear()
    name = get_embedder().name
    marker = [1.0] + [0.0] * (DIMENSIONS - 1)  # no model gives this vector to a text
    _memo_put((name, "already embedded by a request"), marker)
    vectors, model = embed_texts(["already embedded by a request", "not embedded yet"], background=True)
    assert model == name and vectors[0] == marker
    assert np.allclose(vectors[1], embed_query("not embedded yet")[0], atol=1e-5)
    assert not SessionEvent.objects.filter(user__in=[tenant_a.user, tenant_b.user]).exists()


def test_cognibrain_outcomes_and_evidence_do_not_wait_for_the_model(tenant_a, tenant_b) -> None:
    """Their events commit with their full text; the vector follows from the batcher, as for brain_log_event."""
    from projects.scope import Principal
    from sessions.services.cognibrain import outcome_record, patch_evidence_record
    from sessions.services.current import session_current

    session = session_current(principal=Principal(user=tenant_a.user))
    with transaction.atomic():  # the batcher only hears of the rows once this commits
        outcome = outcome_record(session=session, command="pnpm run lint", exit_code=1, stderr="3 errors").event
        evidence = patch_evidence_record(session=session, task="fix the lint errors", files=["src/app.ts"],
                                         commands=["pnpm run lint"])
        rows = SessionEvent.objects.filter(pk__in=[outcome.pk, evidence.pk])
        assert rows.count() == 2 and not rows.filter(embedding__isnull=False).exists()
    assert EVENT_BATCHER.flush(timeout=60)
    assert not SessionEvent.objects.filter(pk__in=[outcome.pk, evidence.pk], embedding__isnull=True).exists()
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_an_event_without_words_is_left_unembedded_by_the_backfill_too(client: Client, tenant_a, tenant_b) -> None:
    """The write path queues no blank text, and the beat task must not give it a vector of nothing either: every such
    event would share one meaningless vector that session search could rank."""
    mcp_a, mcp_b = Mcp(client, tenant_a.user_raw), Mcp(client, tenant_b.user_raw)
    sid_a = call_tool(mcp_a, "brain_start_session", {})["structuredContent"]["sessionId"]
    sid_b = call_tool(mcp_b, "brain_start_session", {})["structuredContent"]["sessionId"]
    blank = _log(mcp_a, sid_a, "   ")
    words = _log(mcp_b, sid_b, "the nightly export finished")
    assert EVENT_BATCHER.flush(timeout=60)
    SessionEvent.objects.filter(pk=words).update(embedding=None, embedding_model="")
    assert SessionEvent.objects.get(pk=blank).content.strip() == ""
    assert embed_pending_events() == 1  # the other tenant's worded event only
    assert SessionEvent.objects.get(pk=blank).embedding is None
    assert SessionEvent.objects.get(pk=words).embedding is not None
