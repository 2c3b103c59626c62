"""`brain doctor`'s indexes line: a declared index the database lacks (a bench killed during its load drops the
knowledge search indexes), holds invalid or holds with other storage parameters than declared (a GIN index with a
pending list) fails the line with the fix, and `--restore-indexes` builds it as the model declares it, touching no
row. The schema changes here roll back with the test's transaction."""

from __future__ import annotations

import argparse

import pytest
from django.db import connection

from brain import doctor
from brain.db_indexes import check_indexes, declared_options, drifted_indexes, indexes_restore, missing_indexes
from knowledge.models import KnowledgeItem
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def _definition(name: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        row = cursor.fetchone()
    return row[0] if row else None


def test_every_declared_index_is_there_on_a_migrated_database() -> None:
    assert missing_indexes() == [] and drifted_indexes() == []
    assert check_indexes() == (True, "every declared index is built and usable, with its declared options")


def test_dropped_and_invalid_indexes_fail_the_line_and_are_rebuilt(tenant_a: Tenant, tenant_b: Tenant) -> None:
    KnowledgeItem.objects.create(owner=tenant_a.user, project=tenant_a.project, type="rule", content="alpha's rule")
    KnowledgeItem.objects.create(owner=tenant_b.user, project=tenant_b.project, type="rule", content="bravo's rule")
    before = {name: _definition(name) for name in ("knowledge_embedding_hnsw", "knowledge_search_gin",
                                                     "knowledge_tags_gin")}
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the rows' deferred checks, before DDL in this transaction
        cursor.execute("DROP INDEX knowledge_embedding_hnsw")
        cursor.execute("DROP INDEX knowledge_search_gin")
        # What an interrupted CREATE INDEX CONCURRENTLY leaves: the index is there but the planner may not use it.
        cursor.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'knowledge_tags_gin'::regclass")
    ok, detail = check_indexes()
    assert not ok and "--restore-indexes" in detail
    assert {"knowledge_embedding_hnsw", "knowledge_search_gin", "knowledge_tags_gin"} <= set(detail.replace(",", " ")
                                                                                          .replace(".", " ").split())
    said: list[str] = []
    assert indexes_restore(said.append) == 3 and len(said) == 3
    assert check_indexes()[0] and {name: _definition(name) for name in before} == before
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1  # no row touched, either tenant's
    assert KnowledgeItem.objects.filter(owner=tenant_b.user).count() == 1


def test_doctor_restores_with_its_flag(capsys: pytest.CaptureFixture[str], tenant_a: Tenant) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the tenant's deferred checks, before DDL in this transaction
        cursor.execute("DROP INDEX knowledge_search_gin")
    doctor.run(argparse.Namespace(restore_indexes=True))
    out = capsys.readouterr().out
    assert "building knowledge_search_gin on knowledge_knowledgeitem (maintenance_work_mem 1GB)" in out
    assert "built 1 index(es)" in out
    assert "ok   indexes" in out and _definition("knowledge_search_gin") is not None
    doctor.run(argparse.Namespace(restore_indexes=True))
    assert "no index was missing or built otherwise" in capsys.readouterr().out


def _rows_with_vectors(template: KnowledgeItem, count: int) -> None:
    """`count` copies of the template row, each with its own random vector (an HNSW build over them takes a while)."""
    table = KnowledgeItem._meta.db_table
    columns = ", ".join(f'"{f.column}"' for f in KnowledgeItem._meta.concrete_fields
                        if not getattr(f, "generated", False) and f.column not in ("id", "embedding"))
    with connection.cursor() as cursor:
        # The vector's subquery names the outer row (g) so that each copy draws its own.
        cursor.execute(f'INSERT INTO "{table}" ("id", "embedding", {columns}) SELECT gen_random_uuid(), '
                       "(SELECT array_agg(random() - 0.5 + 0 * (g + d)) FROM generate_series(1, 384) d)::vector, "
                       f'{columns} FROM "{table}", generate_series(1, %s) g WHERE id = %s',
                       [count, template.id])


def test_a_build_says_how_it_is_getting_on(tenant_a: Tenant, tenant_b: Tenant) -> None:
    mine = KnowledgeItem.objects.create(owner=tenant_a.user, project=tenant_a.project, type="rule", content="alpha's")
    KnowledgeItem.objects.create(owner=tenant_b.user, project=tenant_b.project, type="rule", content="bravo's rule")
    _rows_with_vectors(mine, 2000)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("DROP INDEX knowledge_embedding_hnsw")
    said: list[str] = []
    assert indexes_restore(said.append, every=0.02) == 1
    progress = [line for line in said if line.startswith("  knowledge_embedding_hnsw: ")]
    assert progress, said  # the build was reported while it ran, from another connection
    assert any("building index" in line and "blocks (" in line for line in progress), progress
    assert check_indexes()[0]
    assert KnowledgeItem.objects.filter(owner=tenant_b.user).count() == 1


def _options_of(name: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(reloptions, '{}') FROM pg_class WHERE relname = %s", [name])
        row = cursor.fetchone()
    return list(row[0]) if row else []


def test_indexes_built_with_other_options_fail_the_line_and_are_rebuilt(tenant_a: Tenant, tenant_b: Tenant) -> None:
    KnowledgeItem.objects.create(owner=tenant_a.user, project=tenant_a.project, type="rule", content="alpha's rule")
    KnowledgeItem.objects.create(owner=tenant_b.user, project=tenant_b.project, type="rule", content="bravo's rule")
    before = {name: _definition(name) for name in ("knowledge_search_gin", "knowledge_tags_gin", "event_search_gin")}
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER INDEX knowledge_search_gin SET (fastupdate = on)")  # a pending list again
        cursor.execute("ALTER INDEX knowledge_tags_gin RESET (fastupdate)")  # back to PostgreSQL's default
        cursor.execute("ALTER INDEX event_search_gin SET (gin_pending_list_limit = 128)")  # one it never declared
    assert missing_indexes() == []
    assert {drift.index.name: drift.describe() for drift in drifted_indexes()} == {
        "knowledge_search_gin": "knowledge_search_gin: fastupdate on (declared off)",
        "knowledge_tags_gin": "knowledge_tags_gin: fastupdate default (declared off)",
        "event_search_gin": "event_search_gin: gin_pending_list_limit 128 (declared default)"}
    ok, detail = check_indexes()
    assert not ok and detail.startswith("built with other options than declared: ") and "--restore-indexes" in detail
    said: list[str] = []
    assert indexes_restore(said.append) == 3 and len(said) == 3
    assert check_indexes()[0] and drifted_indexes() == []
    assert {name: _definition(name) for name in before} == before
    assert _options_of("knowledge_search_gin") == ["fastupdate=off"] and _options_of("event_search_gin") == [
        "fastupdate=off"]
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1  # no row touched, either tenant's
    assert KnowledgeItem.objects.filter(owner=tenant_b.user).count() == 1


def test_options_compare_as_postgresql_reads_them() -> None:
    declared = {index.name: index for index in KnowledgeItem._meta.indexes}
    assert declared_options(declared["knowledge_search_gin"]) == {"fastupdate": "off"}
    hnsw = declared_options(declared["knowledge_embedding_hnsw"])
    assert hnsw == {"m": "16", "ef_construction": "64"}
    assert dict(pair.split("=", 1) for pair in _options_of("knowledge_embedding_hnsw")) == hnsw
    assert declared_options(declared["knowledge_project_type"]) == {}  # a plain B-tree declares none
    with connection.cursor() as cursor:
        cursor.execute("ALTER INDEX knowledge_search_gin SET (fastupdate = false)")  # "off" in other words
    assert _options_of("knowledge_search_gin") == ["fastupdate=false"]
    assert drifted_indexes() == [] and check_indexes()[0]
