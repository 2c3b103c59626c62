"""Timestamps come back from the database as aware datetimes in UTC, read by psycopg's C loader (brain.pg_backend)."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection, transaction
from psycopg.pq import Format

from projects.models import ApiToken, Project
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)
TIMESTAMPTZ_OID = 1184
MOMENT = datetime.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=datetime.UTC)


def test_cursors_read_timestamps_with_the_c_loader() -> None:
    with connection.cursor() as cursor:
        loader = cursor.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
        used = cursor.cursor.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    assert loader.__module__ == "django.db.backends.postgresql.psycopg_any"  # the connection keeps Django's
    assert used.__module__.startswith(("psycopg_binary", "psycopg_c")), used


@pytest.mark.parametrize("literal", ["2026-03-04 05:06:07.123456+00", "2026-03-04 06:06:07.123456+01",
                                     "2026-03-03 23:36:07.123456-05:30"])
def test_a_raw_read_is_the_same_instant_in_utc(literal: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz", [literal])
        (value,) = cursor.fetchone()
    assert value == MOMENT and value.tzinfo is datetime.UTC


def test_orm_round_trip_and_server_side_cursor_keep_utc_and_the_tenant(tenant_a: Tenant, tenant_b: Tenant) -> None:
    ApiToken.objects.filter(pk=tenant_a.user_token.pk).update(expires_at=MOMENT)
    token = ApiToken.objects.get(pk=tenant_a.user_token.pk)
    assert token.expires_at == MOMENT and token.expires_at.tzinfo is datetime.UTC
    with transaction.atomic():  # a named (server-side) cursor, which Django builds on its own path
        streamed = list(Project.objects.filter(created_by=tenant_a.user).iterator(chunk_size=1))
    assert [p.pk for p in streamed] == [tenant_a.project.pk]
    assert all(p.created_at.tzinfo is datetime.UTC for p in streamed)
    assert not ApiToken.objects.filter(user=tenant_b.user, expires_at=MOMENT).exists()
