"""Idempotency keys: a create retried with the same key returns its first answer and stores nothing new.

Race safety comes from PostgreSQL, not from a read-then-write: the key row is inserted with
ON CONFLICT DO NOTHING in the same transaction as the write it guards. A concurrent retry's insert waits
on the first transaction; when that commits it sees the row and replays the stored answer, when it rolls
back (the write failed) the retry claims the key and runs the write itself. Keys expire after KEY_TTL.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from brain.errors import Conflict
from projects.models import IdempotencyKey
from projects.scope import Principal

KEY_TTL = timedelta(hours=24)
KEY_MAX = 200  # characters; a UUID is 36


@dataclass(frozen=True)
class Answer:
    """What a guarded write answered: an HTTP-like status and a JSON body. `keep` = store it for replays."""

    status: int
    body: Any
    keep: bool = True
    replayed: bool = False


def request_fingerprint(value: Any) -> str:
    """A stable digest of a request's content, so one key reused for different content is refused."""
    raw = value if isinstance(value, bytes) else json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()


def holder_of(principal: Principal) -> str:
    return f"token:{principal.token.id}" if principal.token is not None else f"user:{principal.user.id}"


def _claim(*, principal: Principal, scope: str, key: str, fingerprint: str) -> bool:
    """Inserts the key row; False when it already exists (after waiting for a transaction still writing it)."""
    now = timezone.now()
    holder = holder_of(principal)
    IdempotencyKey.objects.filter(holder=holder, scope=scope, key=key, expires_at__lte=now).delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO projects_idempotencykey "
            "(user_id, holder, scope, key, fingerprint, status, created_at, expires_at) "
            "VALUES (%s, %s, %s, %s, %s, 0, %s, %s) ON CONFLICT (holder, scope, key) DO NOTHING RETURNING id",
            [principal.user.id, holder, scope, key, fingerprint, now, now + KEY_TTL],
        )
        return cursor.fetchone() is not None


def idempotent_write(*, principal: Principal, scope: str, key: str, fingerprint: str,
                     run: Callable[[], Answer]) -> Answer:
    """Runs `run` at most once per (caller, scope, key) within KEY_TTL; later calls get the first kept answer.

    An answer with keep=False (a refusal) or an exception leaves no trace, so the retry runs again."""
    with transaction.atomic():
        if not _claim(principal=principal, scope=scope, key=key, fingerprint=fingerprint):
            return _replay(principal=principal, scope=scope, key=key, fingerprint=fingerprint)
        answer = run()
        if not answer.keep:
            transaction.set_rollback(True)  # nothing was written; forget the key too
            return answer
        IdempotencyKey.objects.filter(holder=holder_of(principal), scope=scope, key=key).update(
            status=answer.status, body=answer.body)
        return answer


def _replay(*, principal: Principal, scope: str, key: str, fingerprint: str) -> Answer:
    row = IdempotencyKey.objects.get(holder=holder_of(principal), scope=scope, key=key)
    if row.fingerprint != fingerprint:
        raise Conflict(
            f"idempotency key {key!r} was already used for a different {scope} request in the last "
            f"{int(KEY_TTL.total_seconds() // 3600)} h; send a new key for a new request",
            details={"idempotencyKey": key})
    return Answer(status=row.status, body=row.body, replayed=True)


def idempotency_keys_purge(*, now: Any = None) -> int:
    """Deletes expired keys (a beat job); returns how many."""
    deleted, _ = IdempotencyKey.objects.filter(expires_at__lte=now or timezone.now()).delete()
    return deleted
