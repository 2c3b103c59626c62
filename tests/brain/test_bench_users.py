"""The in-database benches' users: a run removes what an earlier, killed run of the same bench left on the brain's
database (its user, knowledge rows, guard patterns, sessions and events), never another bench's or a tenant's, and
a second run while one is live is refused."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from django.db import connection

from brain.bench.bench_users import BenchBusy, _lock_key, bench_user, leftovers_remove
from brain.db_indexes import missing_indexes
from knowledge.guard_models import GuardPattern
from knowledge.models import KnowledgeItem
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.guard import guard_rule_add
from projects.models import User
from projects.services.accounts import project_ensure_named, user_create
from sessions.models import Session, SessionEvent
from sessions.services.events import session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _left_by_a_killed_run(email: str) -> User:
    """What a run killed before its cleanup leaves: a user owning knowledge, a guard rule and a session."""
    user = user_create(email=email)
    project, _ = project_ensure_named(user=user, name="bench")
    for n in range(3):
        knowledge_create(owner=user, project=project, draft=KnowledgeDraft(content=f"bench rule number {n}",
                                                                          type="heuristic"), defer_vectors=True)
    guard_rule_add(owner=user, project=project, kind="command_exact", pattern="rm -rf build", text="never that")
    session_start(user=user, project=project, prompt="a bench prompt", defer_vectors=True)
    return user


def test_a_run_removes_what_a_killed_run_of_the_same_bench_left(tenant_a: Tenant, tenant_b: Tenant) -> None:
    dead = _left_by_a_killed_run("tools-0123456789@bench.invalid")
    other_bench = _left_by_a_killed_run("scale-0123456789@bench.invalid")
    kept = knowledge_create(owner=tenant_a.user, project=tenant_a.project,
                            draft=KnowledgeDraft(content="the tenant's own rule", type="heuristic"), defer_vectors=True)
    assert leftovers_remove("tools") == 4  # three rules and the guard rule's item
    assert not User.objects.filter(pk=dead.pk).exists()
    assert not KnowledgeItem.objects.filter(owner=dead).exists() and not Session.objects.filter(user=dead).exists()
    assert not SessionEvent.objects.filter(user=dead).exists()
    assert not GuardPattern.objects.filter(knowledge__owner=dead).exists()
    # Another bench's leftovers wait for that bench; the tenants lose nothing.
    assert KnowledgeItem.objects.filter(owner=other_bench).count() == 4
    assert KnowledgeItem.objects.filter(pk=kept.pk).exists()
    assert User.objects.filter(pk__in=[tenant_a.user.pk, tenant_b.user.pk]).count() == 2
    assert leftovers_remove("tools") == 0


def test_a_run_gets_its_own_user_and_removes_it_even_when_it_fails(tenant_a: Tenant) -> None:
    _left_by_a_killed_run("cognibrain-0123456789@bench.invalid")
    with pytest.raises(RuntimeError), bench_user("cognibrain") as user:
        assert user.email.startswith("cognibrain-") and user.email.endswith("@bench.invalid")
        knowledge_create(owner=user, project=None, draft=KnowledgeDraft(content="loaded by the run",
                                                                        type="heuristic"), defer_vectors=True)
        assert User.objects.filter(email__endswith="@bench.invalid").count() == 1  # the leftover went first
        raise RuntimeError("the bench failed half way")
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert not KnowledgeItem.objects.exclude(owner=tenant_a.user).exists()
    assert User.objects.filter(pk=tenant_a.user.pk).exists()


def _wait_for_backend_exit(pid: int) -> None:
    for _ in range(200):
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            row = cursor.fetchone()
        if not row or not row[0]:
            return
        time.sleep(0.05)
    raise AssertionError(f"backend {pid} still there after 10 s")


def test_a_second_run_while_one_is_live_is_refused_and_changes_nothing(tenant_a: Tenant) -> None:
    live = _left_by_a_killed_run("tools-livelivelive@bench.invalid")  # the live run's user, not a leftover
    db = connection.settings_dict
    conninfo: Any = {"dbname": db["NAME"], "user": db["USER"], "host": db["HOST"], "port": db["PORT"] or 5432,
                     "password": db["PASSWORD"] or None}
    with psycopg.connect(**conninfo, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [_lock_key("tools")])
        with pytest.raises(BenchBusy, match="another run of this bench"), bench_user("tools"):
            pass
        assert User.objects.filter(email__endswith="@bench.invalid").count() == 1
        assert KnowledgeItem.objects.filter(owner=live).count() == 4
        gone = other.info.backend_pid
    # The live run's connection is gone (killed): the next run may clean up after it, once the server has ended
    # that backend (a closed connection's backend releases its locks as it exits, a moment after the close).
    _wait_for_backend_exit(gone)
    with bench_user("tools") as user:
        assert not User.objects.filter(pk=live.pk).exists() and user.pk != live.pk
    assert User.objects.filter(pk=tenant_a.user.pk).exists()


def _vacuumed_at() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, last_vacuum FROM pg_stat_user_tables WHERE relname = ANY(%s)",
                       [[model._meta.db_table for model in (KnowledgeItem, SessionEvent, Session)]])
        return dict(cursor.fetchall())


def test_a_run_vacuums_the_tables_it_removed_its_rows_from(tenant_a: Tenant, tenant_b: Tenant,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Its dead rows would otherwise stay until autovacuum, which the next run's index drops cancel; the knowledge
    graph is dropped for the delete and built again after it, not repaired by the vacuum."""
    before = _vacuumed_at()
    with bench_user("tools") as user:
        project, _ = project_ensure_named(user=user, name="bench")
        for n in range(20):
            knowledge_create(owner=user, project=project, draft=KnowledgeDraft(content=f"bench rule {n}",
                                                                              type="heuristic"), defer_vectors=True)
        session_start(user=user, project=project, prompt="a bench prompt", defer_vectors=True)
    after = _vacuumed_at()
    assert set(after) == {m._meta.db_table for m in (KnowledgeItem, SessionEvent, Session)}
    assert all(stamp is not None and stamp != before.get(table) for table, stamp in after.items()), (before, after)
    assert "vacuumed their tables and rebuilt the knowledge vector index" in capsys.readouterr().err
    assert not missing_indexes()  # the graph dropped before the delete is built again
    assert not KnowledgeItem.objects.exclude(owner__in=[tenant_a.user, tenant_b.user]).exists()
    _left_by_a_killed_run("tools-0123456789@bench.invalid")
    kept = knowledge_create(owner=tenant_b.user, project=tenant_b.project,
                            draft=KnowledgeDraft(content="the tenant's own rule", type="heuristic"), defer_vectors=True)
    leftovers_remove("tools")
    assert _vacuumed_at()[KnowledgeItem._meta.db_table] != after[KnowledgeItem._meta.db_table]
    assert KnowledgeItem.objects.filter(pk=kept.pk).exists()
