"""`brain bench tools` at toy size: it loads rows, drives real MCP clients, prints figures and cleans up."""

from __future__ import annotations

import argparse
import asyncio
import threading
from pathlib import Path

import pytest

from brain.bench import tools
from brain.bench.bench_users import bench_user
from knowledge.models import KnowledgeItem
from projects.models import User
from projects.services.accounts import project_ensure_named
from sessions.models import Session
from tests.conftest import Tenant
from tests.support.bench import bench_report, run_bench


@pytest.mark.django_db(transaction=True)
def test_bench_tools_runs_and_cleans_up(capsys: pytest.CaptureFixture[str], small_corpus: Path,
                                        tenant_a: Tenant) -> None:
    killed = User.objects.create(email="tools-0123456789@bench.invalid")  # left by a run killed before its cleanup
    KnowledgeItem.objects.create(owner=killed, type="rule", content="a row the killed run loaded")
    report = bench_report(tools, ["--items", "300", "--clients", "2", "--rounds", "2", "--rules", "20", "--json",
                                  "--corpus", str(small_corpus), "--other-rows", "50", "--other-projects", "3"], capsys)
    (run,) = report["runs"]
    assert (report["otherRows"], report["otherProjects"]) == (50, 3)  # another owner's projects in the same table
    assert report["setup"]["cached"] is True  # the rows and both search indexes read into the page cache
    assert report["written"] == 0 and "gin_pending" not in report["setup"]
    assert run["clients"] == 2
    assert run["brain_start_session"]["n"] == 4 == run["brain_report_session_outcome"]["n"]
    assert run["brain_list_projects"]["n"] == 4
    assert run["brain_log_event"]["n"] == 4 * tools.LOGS_PER_ROUND == run["events"] == run["eventsStored"]
    assert run["starts_with_injection"] == 4
    # The host's speed beside the figures: the model's time for one prompt and a round trip, both measured.
    assert report["host"]["modelMs"] > 0 and report["host"]["roundTripUs"] > 0
    assert f"through the model {report['host']['modelMs']} ms p50" in tools.render(report)
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()  # the run's own, and the killed run's
    assert not KnowledgeItem.objects.exists()
    # Another tenant on the same database: still there, and none of the bench's sessions are its.
    assert User.objects.filter(pk=tenant_a.user.pk).exists() and not Session.objects.filter(user=tenant_a.user).exists()


@pytest.mark.django_db(transaction=True)
def test_rows_written_after_the_build_go_through_the_indexes(small_corpus: Path, tenant_a: Tenant) -> None:
    # As a live brain's writes reach the indexes between two vacuums: none of their entries waits in a pending list
    # that every search would read. (The load's own rows and the run's figures are the test above's.)
    rules = tools.rules_of(small_corpus)[:20]
    try:
        with bench_user("tools") as user:
            project, _ = project_ensure_named(user=user, name="tools bench")
            setup = tools._load_rows(user, project, rules, 100, 11, written=40)
            assert setup["gin_pending"] == 0 and setup["written_s"] >= 0
            assert KnowledgeItem.objects.filter(owner=user, project=project).count() == 140
            assert not KnowledgeItem.objects.filter(owner=tenant_a.user).exists()  # the other tenant got none of them
    finally:
        tools._restore_indexes()
    assert not KnowledgeItem.objects.exists()
    assert run_bench(tools, ["--written", "-1", "--corpus", str(small_corpus)]) == 2  # refused, nothing loaded


@pytest.mark.django_db(transaction=True)
def test_a_client_that_cannot_start_stops_the_run_instead_of_hanging_it(tenant_a: Tenant) -> None:
    # A client whose handshake fails (here: a token nobody issued) must end the run with its error, not leave the
    # other clients and the clock waiting at the start line.
    outcome: list[BaseException | None] = []

    def drive() -> None:
        try:
            with tools.product_server(1) as url:
                tools._drive(url, argparse.Namespace(seed=1, rounds=1), 3, "eb_not-a-token", ["one rule of words"])
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    runner = threading.Thread(target=drive, daemon=True)
    runner.start()
    runner.join(timeout=120)
    assert not runner.is_alive(), "the run hung"
    assert outcome and isinstance(outcome[0], Exception)
    assert not isinstance(outcome[0], asyncio.BrokenBarrierError)  # the client's own error, not the barrier's
    assert not Session.objects.exists()  # nothing was opened, for the tenant or anyone
