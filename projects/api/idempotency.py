"""`Idempotency-Key` on every POST of /api/v1: a retried create answers its first response (with
`Idempotent-Replayed: true`) and stores nothing new. Refusals (4xx/5xx) are not remembered, so a corrected
retry runs. The key is per caller (token, or user for the browser session) and per route.

A minted token's secret is never stored: replaying that key answers 409 naming the token already minted."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.http.multipartparser import MultiPartParserError

from brain.errors import RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, Conflict, database_unavailable
from projects.api.auth import API_AUTH
from projects.api.errors import envelope, too_big_message
from projects.scope import Principal
from projects.services.idempotency import KEY_MAX, Answer, idempotent_write, request_fingerprint

HEADER = "Idempotency-Key"
SECRET_ROUTES = ("/api/v1/tokens",)  # answers carrying a secret shown once
View = Callable[..., HttpResponseBase]


def _fingerprint(request: HttpRequest) -> str:
    """The request's content: its raw body, or for a multipart upload its fields and files. A client draws a new
    multipart boundary for every send, so a retry of the same import would otherwise look like another request."""
    raw = request.path.encode() + b"\n" + request.body
    if request.content_type != "multipart/form-data":
        return request_fingerprint(raw)
    try:
        fields = sorted((name, values) for name, values in request.POST.lists())
        files = sorted((name, f.name or "", _digest(f)) for name, parts in request.FILES.lists() for f in parts)
    except MultiPartParserError:  # the operation refuses it with its own message
        return request_fingerprint(raw)
    return request_fingerprint({"path": request.path, "fields": fields, "files": files})


def _digest(upload: Any) -> str:
    """An uploaded file's digest, the file rewound for the operation that reads it next."""
    digest = hashlib.sha256(upload.read()).hexdigest()
    upload.seek(0)
    return digest


def _principal(request: HttpRequest) -> Principal | None:
    """The caller as the API would authenticate it; None lets the view give its own 401/403."""
    for auth in API_AUTH:
        try:
            found = auth(request)
        except Exception:  # refused (HttpError) or the database is down: the view answers in its own way
            return None
        if isinstance(found, Principal):
            return found
    return None


def _key_problem(key: str) -> str | None:
    if not 0 < len(key) <= KEY_MAX or not all("\x21" <= ch <= "\x7e" for ch in key):
        return f"{HEADER} must be 1 to {KEY_MAX} printable ASCII characters without spaces (a UUID works)"
    return None


def _answer(response: HttpResponseBase) -> Answer:
    kept = 200 <= response.status_code < 300 and "json" in response.get("Content-Type", "")
    body = json.loads(getattr(response, "content", b"") or b"null") if kept else None
    return Answer(status=response.status_code, body=body, keep=kept)


def _replayed(request: HttpRequest, answer: Answer) -> JsonResponse:
    if request.path.startswith(SECRET_ROUTES):
        minted = answer.body.get("id") if isinstance(answer.body, dict) else None
        return envelope(409, Conflict.code, "this Idempotency-Key already minted a token; its secret was shown "
                        "once. Use or revoke that token", {"tokenId": minted})
    response = JsonResponse(answer.body, status=answer.status, safe=False)
    response["Idempotent-Replayed"] = "true"
    return response


def idempotent_view(view: View) -> View:
    """Wraps a ninja view: POSTs with an Idempotency-Key run once per caller, route and key."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        key = request.headers.get(HEADER)
        if request.method != "POST" or key is None:
            return view(request, *args, **kwargs)
        if problem := _key_problem(key):
            return envelope(400, "VALIDATION", problem, {"header": HEADER})
        principal = _principal(request)
        if principal is None:
            return view(request, *args, **kwargs)
        try:
            fingerprint = _fingerprint(request)  # read here, outside the operation whose handlers map its errors
        except RequestDataTooBig:
            return envelope(413, "VALIDATION", *too_big_message())
        seen: list[HttpResponseBase] = []

        def run() -> Answer:
            seen.append(view(request, *args, **kwargs))
            answer = _answer(seen[0])
            if answer.keep and request.path.startswith(SECRET_ROUTES) and isinstance(answer.body, dict):
                return Answer(status=answer.status, body={"id": answer.body.get("id")})  # never the secret
            return answer

        try:
            answer = idempotent_write(principal=principal, scope=f"POST {request.path}"[:200], key=key,
                                      fingerprint=fingerprint, run=run)
        except Conflict as exc:
            return envelope(409, exc.code, exc.message, exc.details)
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            response = envelope(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE,
                                {"retryable": True, "retryAfterSeconds": RETRY_AFTER_SECONDS})
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response
        return _replayed(request, answer) if answer.replayed else seen[0]

    return wrapped
