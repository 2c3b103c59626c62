"""Progress of long commands (imports, backfills, benchmarks) on stderr: a live bar on a terminal, and a plain
line every PLAIN_EVERY_S seconds when stderr is a file or a pipe (CI logs, `2> run.err`), where a bar that
redraws itself with carriage returns would show nothing useful."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

from tqdm import tqdm

PLAIN_EVERY_S = 30.0


class PlainProgress:
    """tqdm's `update` / `set_postfix_str` for a log: `desc: done/total unit (share), rate/s, about N min left`."""

    def __init__(self, *, total: int, desc: str, unit: str) -> None:
        self.total, self.desc, self.unit, self.done, self.postfix = total, desc, unit, 0, ""
        self.started = self.printed = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self.printed >= PLAIN_EVERY_S:
            self.emit()

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def emit(self) -> None:
        self.printed = time.monotonic()
        rate = self.done / max(self.printed - self.started, 1e-9)
        share = f" ({100 * self.done / self.total:.1f}%)" if self.total else ""
        left = f", about {(self.total - self.done) / rate / 60:.0f} min left" if rate and self.total else ""
        extra = f", {self.postfix}" if self.postfix else ""
        print(f"{self.desc}: {self.done}/{self.total} {self.unit}{share}, {rate:.1f}/s{left}{extra}",
              file=sys.stderr, flush=True)

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.emit()


def progress(*, total: int, desc: str, unit: str) -> Any:
    """A context manager with `update(n)` and `set_postfix_str(text)`: tqdm on a terminal, PlainProgress otherwise."""
    if sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)
    return PlainProgress(total=total, desc=desc, unit=unit)
