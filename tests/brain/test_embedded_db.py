from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from brain import embedded_db
from brain.errors import StartupError


def test_start_creates_database_with_pgvector_and_stop_stops_it(tmp_path: Path) -> None:
    server, started = embedded_db.ensure_running(tmp_path)
    try:
        assert started
        again, started_again = embedded_db.ensure_running(tmp_path)
        assert again == server and not started_again
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            row = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
        assert row is not None and row[0] == pytest.approx(1.0)
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
