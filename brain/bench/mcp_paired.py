"""`brain bench mcp --reference`: the brain and the SDK reference measured in turns, not one after the other.

A 2-core host's speed drifts by a third within minutes (docs/benchmarks.md, issue 17): measured one after the other,
the two servers met different machines and the ratio followed the drift (1.97x and 2.29x in two runs 25 minutes
apart, the brain's p50 alike in both). Here both servers run for the whole series and take turns in blocks,
brain-reference then reference-brain (so a drift that runs one way through the series favours neither), and each
side's figures pool its blocks. The spread of the per-block ratios says how far the host moved meanwhile.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

BLOCKS = 6


@dataclass(frozen=True)
class Sample:
    """One block of calls: each call's latency (seconds) and the block's wall time."""

    latencies: list[float]
    elapsed: float


@dataclass(frozen=True)
class Endpoint:
    """A server to measure: its /mcp URL and the bearer token it takes."""

    url: str
    token: str


Sampler = Callable[[Endpoint, int, int], Coroutine[Any, Any, Sample]]  # (endpoint, clients, calls)


def pooled(samples: Sequence[Sample]) -> dict[str, float]:
    """p50/p95/p99 (ms) over every call of `samples`, and calls per second over their summed wall time."""
    latencies = [value for sample in samples for value in sample.latencies]
    cuts = statistics.quantiles(latencies, n=100)
    return {"calls": len(latencies), "p50": cuts[49] * 1000, "p95": cuts[94] * 1000, "p99": cuts[98] * 1000,
            "rate": len(latencies) / sum(sample.elapsed for sample in samples)}


def warm_up_calls(clients: int) -> int:
    """Calls made before a series is timed: connections, caches and the first calls' imports."""
    return max(100, clients * 10)


def turns(blocks: int) -> list[tuple[str, str]]:
    """The order of each block: brain first in even blocks, the reference first in odd ones."""
    return [("brain", "reference") if block % 2 == 0 else ("reference", "brain") for block in range(blocks)]


def paired(sampler: Sampler, brain: Endpoint, reference: Endpoint, *, clients: int, calls: int,
           blocks: int = BLOCKS) -> tuple[dict[str, float], dict[str, float], list[float]]:
    """Each server's pooled figures over `calls` calls in `blocks` turns, and each block's p50 ratio (brain over
    reference)."""
    endpoints = {"brain": brain, "reference": reference}
    for endpoint in endpoints.values():
        asyncio.run(sampler(endpoint, clients, warm_up_calls(clients)))
    taken: dict[str, list[Sample]] = {"brain": [], "reference": []}
    for block, order in enumerate(turns(blocks)):
        share = max(clients, calls // blocks + (1 if block < calls % blocks else 0))
        for name in order:
            taken[name].append(asyncio.run(sampler(endpoints[name], clients, share)))
    block_ratios = [statistics.median(ours.latencies) / statistics.median(theirs.latencies)
                    for ours, theirs in zip(taken["brain"], taken["reference"], strict=True)]
    return pooled(taken["brain"]), pooled(taken["reference"]), block_ratios


def spread(block_ratios: Sequence[float]) -> dict[str, Any]:
    """The lowest, median and highest per-block p50 ratio."""
    return {"min": round(min(block_ratios), 2), "median": round(statistics.median(block_ratios), 2),
            "max": round(max(block_ratios), 2)}
