"""Structured logging: one `key=value` line per event, starting with `op=` when there is one.

    log_op(logger, "mcp.tool", tool="brain_list_projects", durMs=3, outcome="ok")

An unexpected exception is logged once with `log_failure`, which returns the short `ref` the interface
puts in its answer, so a user's report ("ref 3f9c01ab") finds the traceback in the log.
"""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime
from typing import Any


def _quote(value: object) -> str:
    text = str(value)
    if text == "" or any(ch in text for ch in ' ="\n\t'):
        escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    return text


def logfmt(fields: dict[str, Any]) -> str:
    return " ".join(f"{key}={_quote(value)}" for key, value in fields.items() if value is not None)


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        op_fields = getattr(record, "op_fields", None)
        if op_fields:
            fields.update(op_fields)
        else:
            fields["msg"] = record.getMessage()
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        return logfmt(fields)


class _Logfmt:
    """A record's message as `k=v` text, built only if a handler asks for it: LogfmtFormatter writes the fields
    themselves, so on the served path the line is formatted once (it was twice, once per tool call for nothing)."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return logfmt(self.fields)


def log_op(logger: logging.Logger, op: str, *, level: int = logging.INFO, exc_info: BaseException | None = None,
           **fields: Any) -> None:
    """Emit one machine-parseable event line: `op=<op> k=v ...` (with the traceback when `exc_info` is given)."""
    if not logger.isEnabledFor(level):
        return
    payload = {"op": op, **fields}
    logger.log(level, _Logfmt(payload), exc_info=exc_info, extra={"op_fields": payload})


def log_failure(logger: logging.Logger, op: str, exc: BaseException, **fields: Any) -> str:
    """Logs an unexpected exception as one error line with its traceback and a fresh correlation id
    (`ref`, 8 hex characters), and returns that id for the answer the caller gets."""
    ref = secrets.token_hex(4)
    log_op(logger, op, level=logging.ERROR, exc_info=exc, ref=ref, error=type(exc).__name__, **fields)
    return ref


def failure_message(ref: str) -> str:
    """What a caller is told about an unexpected failure: nothing of the exception, only the ref to quote."""
    return f"Internal error (ref {ref}): the server failed; quote this ref to its operator, who finds it in the log"
