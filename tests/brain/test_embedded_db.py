from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from brain import embedded_db
from brain.errors import StartupError


def test_start_creates_database_with_pgvector_and_stop_stops_it(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_DB_SHARED_BUFFERS_MB", "160")
    server, started = embedded_db.ensure_running(tmp_path)
    try:
        assert started
        again, started_again = embedded_db.ensure_running(tmp_path)
        assert again == server and not started_again
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            row = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
            pages = conn.execute("SELECT setting::int FROM pg_settings WHERE name = 'shared_buffers'").fetchone()
        assert row is not None and row[0] == pytest.approx(1.0)
        assert pages is not None and pages[0] * 8 // 1024 == 160  # the setting counts 8 kB pages
    finally:
        embedded_db.stop(server)
    assert not embedded_db.is_running(server)


def test_unwritable_data_dir_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(StartupError, match=r"not writable.*BRAIN_DATA_DIR"):
        embedded_db.ensure_running(blocker / "data")


def test_long_data_dir_uses_a_short_socket_dir(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    socket_dir = embedded_db.socket_dir_for(deep)
    assert len(str(socket_dir)) < 60 and socket_dir == embedded_db.socket_dir_for(deep)


def test_shared_buffers_are_an_eighth_of_memory_within_bounds() -> None:
    gib = 2**30
    assert embedded_db.shared_buffers_mb("", memory=512 * 2**20) == 128  # PostgreSQL's own default at least
    assert embedded_db.shared_buffers_mb("", memory=8 * gib) == 1024
    assert embedded_db.shared_buffers_mb("", memory=64 * gib) == 2048  # at most 2 GB
    assert embedded_db.shared_buffers_mb("300", memory=64 * gib) == 300  # a set value wins
    assert 128 <= embedded_db.shared_buffers_mb("") <= 2048  # this machine's (or its cgroup's) memory


@pytest.mark.parametrize("value", ["lots", "1.5", "-64", "8"])
def test_a_bad_shared_buffers_setting_is_one_clear_error_and_makes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("BRAIN_DB_SHARED_BUFFERS_MB", value)
    with pytest.raises(StartupError, match=r"BRAIN_DB_SHARED_BUFFERS_MB must be a whole number of megabytes"):
        embedded_db.ensure_running(tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_a_containers_memory_limit_counts_when_lower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    monkeypatch.setattr(embedded_db, "_CGROUP_LIMITS", (v2, v1))
    machine = embedded_db.usable_memory()  # neither file exists: the machine's memory
    v1.write_text(f"{2**30}\n")
    assert embedded_db.usable_memory() == min(machine, 2**30)
    assert embedded_db.shared_buffers_mb("") == 128  # an eighth of a 1 GB container, at PostgreSQL's own floor
    v2.write_text("max\n")  # cgroup v2 without a limit wins over the v1 file
    assert embedded_db.usable_memory() == machine


def _pages_cached(server: embedded_db.EmbeddedServer) -> tuple[int, int]:
    """The test table's pages in the server's cache, and its pages in all (counted without reading the table)."""
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        row = conn.execute(
            "SELECT (SELECT count(*) FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('warm') "
            "AND reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())), "
            "pg_relation_size('warm') / current_setting('block_size')::int").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_the_page_cache_is_read_back_after_a_restart(tmp_path: Path) -> None:
    server, _ = embedded_db.ensure_running(tmp_path)
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE TABLE warm AS SELECT n, repeat('x', 200) AS pad FROM generate_series(1, 5000) n")
            conn.execute("SELECT count(*) FROM warm")
            preloaded = conn.execute("SHOW shared_preload_libraries").fetchone()
        assert preloaded is not None and embedded_db.PRELOADED in preloaded[0]
        cached, pages = _pages_cached(server)
        assert pages > 100 and cached == pages
        embedded_db.stop(server)  # autoprewarm lists the cached pages on its way down
        server, _ = embedded_db.ensure_running(tmp_path)
        deadline = time.monotonic() + 20
        while (cached := _pages_cached(server)[0]) < pages and time.monotonic() < deadline:
            time.sleep(0.2)  # its worker reads them back in the background after the start
        assert cached == pages
    finally:
        embedded_db.stop(server)
