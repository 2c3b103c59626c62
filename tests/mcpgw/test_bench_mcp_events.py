"""`brain bench mcp --events N`: clients log events to their own sessions; acknowledged events are counted
stored by reading the sessions back over the REST API."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from brain.bench.mcp_events import (
    VectorsPending,
    event_text,
    events_series,
    measure_events,
    paced_text,
    vector_watch,
    within_a_second,
)
from brain.cli import main
from sessions.models import SessionEvent
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _pending() -> VectorsPending:
    """The probe on the test database."""
    db = connection.settings_dict
    return VectorsPending(f"postgresql://{db['USER']}@/{db['NAME']}?host={db['HOST']}&port={db['PORT'] or 5432}")


def test_every_acknowledged_event_is_found_stored(live_server: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    row = asyncio.run(measure_events(live_server.url, tenant_a.user_raw, clients=2, events=20))
    assert (row["events"], row["acknowledged"], row["stored"], row["errors"]) == (20, 20, 20, 0)
    assert row["p50"] > 0 and row["rate"] > 0
    notes = SessionEvent.objects.filter(event_type="note")
    assert notes.filter(user=tenant_a.user).count() == 20 and notes.values("session_id").distinct().count() == 2
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_the_bench_times_how_long_until_every_event_has_its_vector(live_server: Any, tenant_a: Tenant,
                                                                   tenant_b: Tenant) -> None:
    pending = _pending()
    row = asyncio.run(measure_events(live_server.url, tenant_a.user_raw, clients=2, events=20, pending=pending))
    assert row["acknowledged"] == 20 and row["vectorsCaughtUpS"] is not None and row["vectorsCaughtUpS"] >= 0
    assert row["vectorWaitMaxS"] is not None and row["vectorWaitMaxS"] >= 0
    assert pending() == (0, 0.0)
    pending.close()
    assert not SessionEvent.objects.filter(embedding__isnull=True, user=tenant_a.user).exclude(content="").exists()
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()
    without = asyncio.run(measure_events(live_server.url, tenant_a.user_raw, clients=1, events=5))
    assert without["vectorsCaughtUpS"] is None and without["vectorWaitMaxS"] is None  # a brain given by --url


def test_an_event_waiting_for_its_vector_is_counted_with_its_age(live_server: Any, tenant_a: Tenant,
                                                                 tenant_b: Tenant) -> None:
    pending = _pending()
    asyncio.run(measure_events(live_server.url, tenant_a.user_raw, clients=1, events=3))
    hour_ago = timezone.now() - timedelta(hours=1)
    SessionEvent.objects.filter(user=tenant_a.user).update(embedding=None, created_at=hour_ago)
    waiting, oldest = pending()
    assert waiting == 3 and 3500 < oldest < 3700
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()
    backend = pending.connection.info.backend_pid
    pending.close()
    assert _backend_gone(backend)  # the server no longer holds the poller's backend
    assert pending() == (3, pytest.approx(oldest, abs=60))  # asked again, it connects again
    pending.close()


def test_the_bench_probe_indexes_the_backlog_so_a_question_reads_it_alone(live_server: Any, tenant_a: Tenant,
                                                                           tenant_b: Tenant) -> None:
    pending = _pending()
    pending.indexed = True
    try:
        asyncio.run(measure_events(live_server.url, tenant_a.user_raw, clients=1, events=4, pending=pending))
        SessionEvent.objects.filter(user=tenant_a.user).update(embedding=None)
        assert pending()[0] == 4
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [VectorsPending.INDEX])
            (definition,) = cursor.fetchone()
            assert "(created_at) WHERE ((embedding IS NULL) AND (content <> ''::text))" in definition
            cursor.execute("SET LOCAL enable_seqscan = off")  # the table is small: is the index usable at all?
            cursor.execute("EXPLAIN " + VectorsPending.SQL)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert VectorsPending.INDEX in plan
        assert not SessionEvent.objects.filter(user=tenant_b.user).exists()
    finally:
        pending.close()
        with connection.cursor() as cursor:  # the test database keeps the schema its migrations made
            cursor.execute(f"DROP INDEX IF EXISTS {VectorsPending.INDEX}")


def _backend_gone(pid: int) -> bool:
    """Whether the server's backend `pid` has exited (it does so a moment after its client hangs up)."""
    for _ in range(100):
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone() == (0,):
                return True
        time.sleep(0.05)
    return False


def test_paced_writers_keep_to_the_rate_and_write_their_own_texts(live_server: Any, tenant_a: Tenant,
                                                                  tenant_b: Tenant) -> None:
    row = asyncio.run(measure_events(live_server.url, tenant_a.user_raw, clients=2, events=10, rate=50.0))
    # Each client's 5 events are due 40 ms apart: the last 160 ms after the first, so never above 50 * 5/4 a second.
    assert row["acknowledged"] == 10 and row["targetRate"] == 50.0 and row["rate"] <= 62.5
    texts = list(SessionEvent.objects.filter(user=tenant_a.user, event_type="note").values_list("content", flat=True))
    assert len(texts) == len(set(texts)) == 10
    assert event_text(0, 0) in texts and event_text(1, 0) in texts
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()


def test_no_vector_is_waited_for_when_embeddings_are_off(tmp_path: Any) -> None:
    from django.conf import settings
    from django.test import override_settings

    assert vector_watch(None) is None  # a brain given by --url
    watch = vector_watch(str(tmp_path))
    assert watch is not None and watch.indexed and watch.connection is None  # it connects on its first question
    with override_settings(BRAIN_EMBEDDINGS_PROVIDER="none"):
        assert settings.BRAIN_EMBEDDINGS_PROVIDER == "none" and vector_watch(str(tmp_path)) is None


def test_negative_counts_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "mcp", "--events", "-1"]) == 2
    assert "--events and --rate at least 0" in capsys.readouterr().err
    assert main(["bench", "mcp", "--events", "10", "--rate", "-5"]) == 2


def test_a_series_at_several_rates_runs_each_pace_from_the_lowest_then_back_to_back(
        live_server: Any, tenant_a: Tenant, tenant_b: Tenant, capsys: pytest.CaptureFixture[str]) -> None:
    pending = _pending()
    rows = events_series(live_server.url, tenant_a.user_raw, clients=[2], events=10, quiet=False,
                         rates=[0.0, 80.0, 40.0], pending=pending)
    pending.close()
    assert [row["targetRate"] for row in rows] == [40.0, 80.0, None]
    assert all(row["acknowledged"] == row["stored"] == 10 and row["vectorWaitMaxS"] is not None for row in rows)
    said = capsys.readouterr().out
    assert "2 client(s) at 40/s: events=10" in said and "2 client(s) back to back: events=10" in said
    assert not SessionEvent.objects.filter(user=tenant_b.user).exists()
    # One warm-up of 50 events for the client count, then 10 at each of the three paces.
    assert SessionEvent.objects.filter(user=tenant_a.user, event_type="note").count() == 50 + 3 * 10


def _row(clients: int, rate: float, wait: float | None, reached: float = 0.0) -> dict[str, Any]:
    return {"clients": clients, "targetRate": rate or None, "rate": reached or rate, "vectorWaitMaxS": wait}


def test_a_sweep_names_the_highest_rate_that_kept_every_vector_within_a_second(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_row(8, 200, 0.4), _row(8, 300, 0.98, reached=296.4), _row(8, 400, 1.64), _row(8, 500, 0.9),
            _row(1, 100, 0.2), _row(1, 0, 0.3, reached=140.0),
            _row(2, 100, 1.2), _row(2, 200, 0.5)]
    verdicts = within_a_second(rows, quiet=False)
    assert verdicts == [
        # 500/s came in under a second again, but after a miss: the ceiling is the last rate before the first miss.
        {"clients": 8, "upTo": 300.0, "reached": 296.4, "firstMiss": 400.0, "firstMissWaitS": 1.64},
        {"clients": 1, "upTo": 0.0, "reached": 140.0, "firstMiss": None, "firstMissWaitS": None},
        {"clients": 2, "upTo": None, "reached": None, "firstMiss": 100.0, "firstMissWaitS": 1.2},
    ]
    said = capsys.readouterr().out.splitlines()
    assert said == [
        "    8 client(s): every vector within a second up to 300/s (296 events/s reached); at 400/s the longest "
        "wait was 1.64 s",
        "    1 client(s): every vector within a second even back to back (140 events/s reached)",
        "    2 client(s): no rate kept every vector within a second; at 100/s the longest wait was 1.2 s",
    ]
    # A series whose waits were not watched kept nothing.
    assert within_a_second([_row(8, 100, None)], quiet=True)[0]["upTo"] is None


def test_the_series_header_names_its_paces() -> None:
    assert paced_text([0.0]) == ""
    assert paced_text([400.0]) == ", paced to 400/s"
    assert paced_text([200.0, 300.5, 0.0]) == ", paced to 200, 300.5/s in turn, then back to back"


def test_rates_that_are_not_numbers_or_below_zero_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "mcp", "--events", "10", "--rate", "200,fast"])
    assert exited.value.code == 2
    assert "rates are events a second, e.g. 300 or 200,300,400" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "mcp", "--events", "10", "--rate", "nan"])
    assert "rates are events a second" in capsys.readouterr().err
    assert main(["bench", "mcp", "--events", "10", "--rate", "200,-5"]) == 2
    assert "--events and --rate at least 0" in capsys.readouterr().err
