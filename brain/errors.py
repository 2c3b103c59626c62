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
