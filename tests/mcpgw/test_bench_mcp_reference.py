"""`brain bench mcp --reference`: the SDK reference server answers the same client loop; ratios are ours/theirs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from brain.bench import mcp_load
from brain.bench.mcp_reference import pinned, reference_server


def test_reference_server_answers_the_bench_client() -> None:
    # The shared test environment already carries mcp and uvicorn: use it instead of building the cached venv.
    with reference_server(mcp_load.free_port(), Path(sys.executable)) as url:
        figures = asyncio.run(mcp_load.measure(url, "none", modern=False, clients=2, calls=20))
    assert figures["calls"] == 20
    assert figures["p50"] > 0
    assert figures["rate"] > 0


def test_ratios_and_side_by_side_table() -> None:
    ours = [{"clients": 1, "p50": 2.0, "p95": 4.0, "rate": 400.0},
            {"clients": 8, "p50": 9.0, "p95": 20.0, "rate": 600.0}]
    ref = [{"clients": 1, "p50": 1.0, "p95": 2.0, "rate": 800.0},
           {"clients": 8, "p50": 6.0, "p95": 10.0, "rate": 1200.0}]
    assert mcp_load.ratios(ours, ref) == [{"clients": 1, "p50": 2.0, "p95": 2.0, "rate": 0.5},
                                          {"clients": 8, "p50": 1.5, "p95": 2.0, "rate": 0.5}]
    table = mcp_load.render_side_by_side(ours, ref)
    assert "2.00x" in table
    assert "1.50x" in table


def test_reference_versions_come_from_constraints() -> None:
    assert pinned("mcp").startswith("mcp==")
    assert pinned("no-such-package-here") == "no-such-package-here"


def test_an_installed_wheel_pins_the_sdk_it_runs_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No constraints.txt beside an installed wheel: the reference installs the versions installed here."""
    import importlib.metadata

    from brain.bench import mcp_reference

    monkeypatch.setattr(mcp_reference, "CONSTRAINTS", tmp_path / "absent.txt")
    assert pinned("mcp") == f"mcp=={importlib.metadata.version('mcp')}"
    assert pinned("no-such-package-here") == "no-such-package-here"
