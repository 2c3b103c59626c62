"""log_op: one structured line per event, formatted once by LogfmtFormatter, and still readable by any other
handler (pytest's caplog, Celery's) through the record's message."""

from __future__ import annotations

import io
import logging

import pytest

from brain import logs
from brain.logs import LogfmtFormatter, log_op


def _logger(stream: io.StringIO) -> logging.Logger:
    logger = logging.getLogger("tests.brain.logs")
    logger.handlers[:] = []
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LogfmtFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def test_the_line_carries_the_op_and_its_fields_quoted_where_needed() -> None:
    stream = io.StringIO()
    log_op(_logger(stream), "mcp.tool", tool="brain_list_projects", durMs=1.2, note="two words", skipped=None)
    line = stream.getvalue().strip()
    assert line.startswith("ts=") and " level=info logger=tests.brain.logs " in line
    assert line.endswith('op=mcp.tool tool=brain_list_projects durMs=1.2 note="two words"')


def test_the_served_formatter_formats_the_fields_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    real = logs.logfmt

    def counted(fields: dict[str, object]) -> str:
        calls.append(fields)
        return real(fields)

    monkeypatch.setattr(logs, "logfmt", counted)
    log_op(_logger(io.StringIO()), "mcp.tool", tool="t")
    assert len(calls) == 1  # the formatter's own; the record's message is never built for it


def test_a_disabled_level_costs_no_record(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = _logger(io.StringIO())
    logger.setLevel(logging.WARNING)
    made: list[logging.LogRecord] = []
    monkeypatch.setattr(logger, "handle", made.append)
    log_op(logger, "mcp.tool", tool="t")
    assert made == []


def test_other_handlers_read_the_line_as_the_message(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.brain.logs.plain")
    with caplog.at_level(logging.INFO, logger="tests.brain.logs.plain"):
        log_op(logger, "jobs.extract", job=7, outcome="ok")
    assert caplog.records[0].getMessage() == "op=jobs.extract job=7 outcome=ok"
    assert "op=jobs.extract job=7 outcome=ok" in caplog.text
