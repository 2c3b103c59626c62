"""`brain bench tools` at toy size: it loads rows, drives real MCP clients, prints figures and cleans up."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.bench import tools
from knowledge.models import KnowledgeItem
from projects.models import User
from tests.support.bench import bench_report


@pytest.mark.django_db(transaction=True)
def test_bench_tools_runs_and_cleans_up(capsys: pytest.CaptureFixture[str], small_corpus: Path) -> None:
    report = bench_report(tools, ["--items", "300", "--clients", "2", "--rounds", "2", "--rules", "20", "--json",
                                  "--corpus", str(small_corpus)], capsys)
    (run,) = report["runs"]
    assert run["clients"] == 2
    assert run["brain_start_session"]["n"] == 4 == run["brain_report_session_outcome"]["n"]
    assert run["brain_list_projects"]["n"] == 4
    assert run["brain_log_event"]["n"] == 4 * tools.LOGS_PER_ROUND == run["events"] == run["eventsStored"]
    assert run["starts_with_injection"] == 4
    assert not User.objects.filter(email__endswith="@bench.invalid").exists()
    assert not KnowledgeItem.objects.exists()
