"""`brain bench mcp --reference`: the SDK reference server answers the same client loop; ratios are ours/theirs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from brain.bench import mcp_load
from brain.bench.mcp_paired import Endpoint, Sample, paired, pooled, spread, turns
from brain.bench.mcp_reference import pinned, reference_server


def test_reference_server_answers_the_bench_client() -> None:
    # The shared test environment already carries mcp and uvicorn: use it instead of building the cached venv.
    with reference_server(mcp_load.free_port(), Path(sys.executable)) as url:
        figures = asyncio.run(mcp_load.measure(url, "none", modern=False, clients=2, calls=21))
    assert figures["calls"] == 21  # the odd call goes to the first client
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


def test_paired_servers_take_turns_and_each_side_pools_its_blocks() -> None:
    """Two SDK servers stand in for the brain and the reference: the blocks alternate brain-first and
    reference-first, every call of each side is pooled, and there is one p50 ratio per block."""
    order: list[str] = []

    async def recorded(endpoint: Endpoint, clients: int, calls: int) -> Sample:
        order.append(endpoint.url)
        return await mcp_load._legacy_sample(endpoint, clients, calls)

    with reference_server(mcp_load.free_port(), Path(sys.executable)) as first, \
            reference_server(mcp_load.free_port(), Path(sys.executable)) as second:
        ours, theirs, block_ratios = paired(recorded, Endpoint(first, "none"), Endpoint(second, "none"),
                                            clients=1, calls=31, blocks=4)
    assert order[2:] == [first, second, second, first, first, second, second, first]  # after one warm-up each
    assert ours["calls"] == theirs["calls"] == 31  # 8 + 8 + 8 + 7
    assert len(block_ratios) == 4 and all(ratio > 0 for ratio in block_ratios)
    assert turns(3) == [("brain", "reference"), ("reference", "brain"), ("brain", "reference")]


def test_pooled_figures_and_block_spread() -> None:
    samples = [Sample([0.001] * 50 + [0.003] * 50, 0.5), Sample([0.002] * 100, 0.5)]
    figures = pooled(samples)
    assert figures["calls"] == 200
    assert figures["rate"] == 200.0  # calls over the summed wall time of the blocks, not of the pauses between
    assert 1.9 < figures["p50"] < 2.1
    assert spread([1.3, 2.1, 1.4]) == {"min": 1.3, "median": 1.4, "max": 2.1}
    ours = [{"clients": 1, "p50": 2.0, "p95": 4.0, "rate": 400.0}]
    ref = [{"clients": 1, "p50": 1.0, "p95": 2.0, "rate": 800.0}]
    blocks = [{"min": 1.5, "median": 2.0, "max": 2.4}]
    assert mcp_load.ratios(ours, ref, blocks)[0]["p50Blocks"] == blocks[0]
    assert "1.50-2.40x" in mcp_load.render_side_by_side(ours, ref, blocks)


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
