"""What a fuzzed answer must look like, per interface, and the tally `brain bench fuzz` prints.

/mcp answers a JSON-RPC 2.0 envelope (a result or an error with an integer code and a message), or 202
with nothing for a notification; /api/v1 answers JSON, and every error is the one envelope
{"error": {"code", "message", "details"}}. Neither ever answers 5xx to a fuzzed request (a 503 only
while the database is away, which a fuzz run never arranges), nor strict-JSON-invalid text (NaN).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any


def _strict_json(body: bytes) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    return json.loads(body, parse_constant=refuse)


def _json_type(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == "application/json"


def mcp_problem(method: str, status: int, content_type: str, body: bytes) -> str | None:
    """Why this /mcp answer is not in the interface's format, or None."""
    if status >= 500:
        return f"HTTP {status}"
    if status == 202:
        return None if body == b"" else "202 with a body"
    if method == "HEAD":
        return None  # no body by definition; the status is the GET's
    if not _json_type(content_type):
        return f"Content-Type {content_type!r}"
    try:
        message = _strict_json(body)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if method == "DELETE" and status == 200 and message == {"closed": True}:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "id" not in message:
        return "not a JSON-RPC envelope"
    if ("result" in message) == ("error" in message):
        return "needs exactly one of result and error"
    if "error" in message:
        error = message["error"]
        ok = isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
        return None if ok else "malformed error object"
    return None if isinstance(message["result"], dict) else "result is not an object"


def rest_problem(method: str, status: int, content_type: str, body: bytes) -> str | None:
    """Why this /api/v1 answer is not in the interface's format, or None."""
    if status >= 500:
        return f"HTTP {status}"
    if status == 204 or (method == "HEAD" and body == b""):
        return None
    if 300 <= status < 400 and body == b"":
        return None  # Django's APPEND_SLASH: `/api/v1` -> `/api/v1/`, a redirect with nothing to format
    if status < 400:
        if "html" in content_type.lower():
            return f"{status} answered HTML"
        if _json_type(content_type):
            try:
                _strict_json(body)
            except ValueError as exc:
                return f"not JSON: {exc}"
        return None
    if not _json_type(content_type):
        return f"{status} with Content-Type {content_type!r}"
    try:
        envelope = _strict_json(body)
    except ValueError as exc:
        return f"not JSON: {exc}"
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if not (isinstance(envelope, dict) and set(envelope) == {"error"} and isinstance(error, dict)
            and isinstance(error.get("code"), str) and isinstance(error.get("message"), str)
            and isinstance(error.get("details", {}), dict)):
        return "not the error envelope"
    return None


# Answers gunicorn gives itself, before the application sees the request (its own small HTML page): a
# request line over 4094 bytes (414) or a header field over 8190 bytes (431). Counted apart: no code of
# ours runs, and no MCP or REST client sends such requests.
HTTP_SERVER_REFUSALS = (414, 431)


def http_server_refusal(status: int | None, content_type: str) -> bool:
    return status in HTTP_SERVER_REFUSALS and "html" in content_type.lower()


def leaked(body: bytes, secrets: list[str], sent: bytes) -> str | None:
    """The first of another tenant's secrets (texts, ids) in an answer that the request did not carry."""
    text = body.decode("utf-8", "replace")
    for secret in secrets:
        if secret in text and secret.encode() not in sent:
            return secret
    return None


@dataclass
class Tally:
    """Counts and latencies of one interface."""

    cases: int = 0
    server_errors: int = 0
    bad_format: int = 0
    dropped: int = 0
    leaks: int = 0
    refused_by_http_server: int = 0
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, status: int | None, problem: str | None, seconds: float, label: str, leak: str | None,
            refused: bool = False) -> None:
        self.cases += 1
        self.latencies.append(seconds)
        if refused and status is not None:
            self.refused_by_http_server += 1
            self.statuses[status] = self.statuses.get(status, 0) + 1
            return
        if status is None:
            self.dropped += 1
        else:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.server_errors += status >= 500
            self.bad_format += problem is not None and status < 500
            problem = problem if problem or status < 500 else f"HTTP {status}"
        self.leaks += leak is not None
        what = " ".join(w for w in (problem or "", f"leak {leak}" if leak else "") if w)
        kind = f"{label}: {what}"[:300]
        # A few of every kind, so one frequent failure cannot hide a rare one.
        if (status is None or problem or leak) and sum(e.startswith(kind) for e in self.examples) < 2 \
                and len(self.examples) < 40:
            self.examples.append(kind)

    @property
    def failures(self) -> int:
        return self.server_errors + self.bad_format + self.dropped + self.leaks

    def summary(self) -> dict[str, Any]:
        cuts = statistics.quantiles(self.latencies, n=100) if len(self.latencies) > 1 else [0.0] * 99
        return {"cases": self.cases, "5xx": self.server_errors, "nonFormat": self.bad_format,
                "dropped": self.dropped, "leaks": self.leaks, "refusedByHttpServer": self.refused_by_http_server,
                "p50Ms": round(cuts[49] * 1000, 2),
                "p95Ms": round(cuts[94] * 1000, 2), "statuses": dict(sorted(self.statuses.items())),
                "examples": self.examples}
