"""Running a `brain bench …` command in-process, as its CLI entry would, for toy-size bench tests."""

from __future__ import annotations

import argparse
import json
from types import ModuleType
from typing import Any

import pytest


def run_bench(module: ModuleType, argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    module.configure(parser)
    return int(module.run(parser.parse_args(argv)))


def bench_report(module: ModuleType, argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The JSON report of a run that must succeed (pass `--json` in `argv`)."""
    assert run_bench(module, argv) == 0
    return dict(json.loads(capsys.readouterr().out))
