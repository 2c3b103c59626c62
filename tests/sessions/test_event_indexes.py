"""Session events keep the composite indexes their reads use and none of the single-column ones they do not
(migration agent_sessions 0008): every index costs each event's insert and its vector's update."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db
lean = importlib.import_module("sessions.migrations.0008_event_lean_indexes")


def _indexes() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [lean.TABLE])
        return dict(cursor.fetchall())


def _single_column(columns: tuple[str, ...]) -> list[str]:
    return [name for name, ddl in _indexes().items() if any(ddl.endswith(f"USING btree ({c})") for c in columns)]


def test_events_have_only_the_indexes_their_reads_use() -> None:
    names = set(_indexes())
    assert {"event_session_occurred", "event_session_position", "event_user_project", "event_search_gin",
            "event_embedding_hnsw"} <= names
    assert _single_column(lean.COLUMNS) == []
    assert len(_single_column(("project_id",))) == 1  # a project's deletion still finds its events by index


def test_the_migration_reverses_and_applies_again() -> None:
    with connection.cursor() as cursor:
        cursor.execute(lean.RESTORE)
        assert len(_single_column(lean.COLUMNS)) == 3
        cursor.execute(lean.DROP)
    assert _single_column(lean.COLUMNS) == []
