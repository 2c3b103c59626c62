"""One error envelope for every API failure: {"error": {"code", "message", "details"}}.

Codes are stable and documented: the BrainError codes (VALIDATION, NOT_FOUND, FORBIDDEN_PROJECT,
CONFLICT) plus the transport's own (UNAUTHENTICATED, CSRF_FAILED, METHOD_NOT_ALLOWED, RATE_LIMITED,
UNAVAILABLE (503 with Retry-After: the database is unreachable), INTERNAL). An INTERNAL answer names a
short ref that is also in the error's log line.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError

from brain.errors import RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, BrainError, database_unavailable
from brain.logs import failure_message, log_failure, log_op

logger = logging.getLogger("brain.api")

HTTP_CODES = {
    400: "VALIDATION", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT", 413: "VALIDATION", 422: "VALIDATION", 429: "RATE_LIMITED",
}


class ErrorBody(Schema):
    code: str
    message: str
    details: dict[str, Any] = {}


class ErrorEnvelope(Schema):
    error: ErrorBody


def _body(code: str, message: str, details: dict[str, Any] | None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def envelope(status: int, code: str, message: str, details: dict[str, Any] | None = None) -> JsonResponse:
    """The envelope outside a ninja operation (a wrapper around one, or Django's error handlers for /api paths)."""
    return JsonResponse(_body(code, message, details), status=status)


def too_big_message() -> tuple[str, dict[str, Any]]:
    cap = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return (f"the request body is larger than {cap} bytes; send less (split a large import into several requests)",
            {"maxBytes": cap})


def error_response(
    api: NinjaAPI, request: HttpRequest, status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> HttpResponse:
    return api.create_response(request, _body(code, message, details), status=status)


def _validation_details(exc: ValidationError) -> dict[str, Any]:
    fields = []
    for err in exc.errors:
        loc = [str(part) for part in err.get("loc", ()) if part not in ("body", "payload", "query", "path")]
        fields.append({"field": ".".join(loc) or None, "problem": err.get("msg", "invalid")})
    return {"fields": fields}


def install_error_handlers(api: NinjaAPI) -> None:
    """Maps every exception an operation can raise to the envelope; nothing leaks a stack trace."""

    @api.exception_handler(BrainError)
    def _brain(request: HttpRequest, exc: BrainError) -> HttpResponse:
        return error_response(api, request, exc.http_status, exc.code, exc.message, exc.details)

    @api.exception_handler(ValidationError)
    def _validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return error_response(api, request, 400, "VALIDATION", "the request is invalid", _validation_details(exc))

    @api.exception_handler(AuthenticationError)
    def _auth(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        message = "send a valid token as 'Authorization: Bearer <token>' (mint one at /settings/tokens)"
        return error_response(api, request, 401, "UNAUTHENTICATED", message)

    @api.exception_handler(HttpError)
    def _http(request: HttpRequest, exc: HttpError) -> HttpResponse:
        code = "CSRF_FAILED" if "CSRF" in str(exc) else HTTP_CODES.get(exc.status_code, "ERROR")
        return error_response(api, request, exc.status_code, code, str(exc))

    @api.exception_handler(RequestDataTooBig)
    def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        message, details = too_big_message()
        return error_response(api, request, 413, "VALIDATION", message, details)

    @api.exception_handler(MultiPartParserError)
    def _bad_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
        # The client's malformed upload (a bad boundary, oversized part headers), not a server failure.
        return error_response(api, request, 400, "VALIDATION", f"the multipart body is malformed: {exc}; send "
                              "multipart/form-data with a 'file' part, as the OpenAPI document describes")

    @api.exception_handler(Http404)
    def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return error_response(api, request, 404, "NOT_FOUND", str(exc) or "not found")

    @api.exception_handler(Exception)
    def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        if database_unavailable(exc):  # not a bug: the client should retry shortly
            log_op(logger, "api.db_unavailable", level=logging.WARNING, error=type(exc).__name__,
                   method=request.method, path=request.path)
            response = error_response(api, request, 503, "UNAVAILABLE", UNAVAILABLE_MESSAGE,
                                      {"retryable": True, "retryAfterSeconds": RETRY_AFTER_SECONDS})
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response
        ref = log_failure(logger, "api.internal_error", exc, method=request.method, path=request.path)
        return error_response(api, request, 500, "INTERNAL", failure_message(ref), {"ref": ref})
