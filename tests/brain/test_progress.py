"""Long commands report progress on stderr also when it is not a terminal (CI logs, `2> run.err`)."""

from __future__ import annotations

import pytest

from brain import progress as progress_module
from brain.progress import PlainProgress, progress


def test_off_a_terminal_progress_is_plain_lines_with_counts_rate_and_what_is_left(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "PLAIN_EVERY_S", 0.0)  # a line on every update instead of every 30 s
    with progress(total=4, desc="ingest", unit="turn") as bar:
        assert isinstance(bar, PlainProgress)
        bar.update(1)
        bar.set_postfix_str("questions 1/2")
        bar.update(3)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("ingest: 1/4 turn (25.0%), ") and "min left" in lines[0]
    assert lines[-1].startswith("ingest: 4/4 turn (100.0%), ") and lines[-1].endswith(", questions 1/2")


def test_a_quiet_window_prints_only_the_final_line(capsys: pytest.CaptureFixture[str]) -> None:
    with progress(total=0, desc="import", unit="file") as bar:
        bar.update(2)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import: 2/0 file, ") and "left" not in lines[0]
