"""A bench whose corpus is missing (an installed wheel has no ../shared/data) says what to pass, in one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from brain.bench import jobs, loop


@pytest.mark.parametrize(("bench", "flag"), [(jobs, "data"), (loop, "corpus")])
def test_a_missing_corpus_is_one_clear_line(bench: object, flag: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    bench.configure(parser)  # type: ignore[attr-defined]
    args = parser.parse_args([f"--{flag}", str(tmp_path / "absent.jsonl")])
    assert bench.run(args) == 2  # type: ignore[attr-defined]
    said = capsys.readouterr().err
    assert f"need --{flag} FILE" in said and "absent.jsonl" in said and "awesome_cursorrules.jsonl" in said
