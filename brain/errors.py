"""Errors shared by every app. Interfaces map `BrainError.code` to their own wire format."""

from __future__ import annotations


class StartupError(Exception):
    """The process cannot start; the message is one actionable line for the operator."""


class BrainError(Exception):
    """A business error with a stable code (the spec's codes: VALIDATION, NOT_FOUND, ...)."""

    code = "ERROR"
    http_status = 400

    def __init__(self, message: str, *, details: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class ValidationFailed(BrainError):
    code = "VALIDATION"
    http_status = 400


class NotFound(BrainError):
    """Used both for rows that do not exist and rows the caller may not see."""

    code = "NOT_FOUND"
    http_status = 404


class ForbiddenProject(BrainError):
    code = "FORBIDDEN_PROJECT"
    http_status = 403


class Conflict(BrainError):
    code = "CONFLICT"
    http_status = 409


# While the database is unreachable (restarting, failing over) every interface answers "retry shortly"
# in its own format instead of an internal error: JSON-RPC error data, a 503 envelope, 503 on /readyz.
RETRY_AFTER_SECONDS = 2
UNAVAILABLE_MESSAGE = (
    "the database is unavailable for a moment (restarting or unreachable); nothing was changed by this "
    f"request unless it is replayed with the same idempotency key. Retry in {RETRY_AFTER_SECONDS} s"
)


def database_unavailable(exc: BaseException) -> bool:
    """True for a failure to reach the database (connection refused, lost, server shutting down)."""
    from django.db import InterfaceError, OperationalError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:  # Django wraps psycopg's error: walk the chain
        seen.add(id(current))
        if isinstance(current, (OperationalError, InterfaceError)):
            return True
        current = current.__cause__ or current.__context__
    return False
