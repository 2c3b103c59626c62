"""Request rate limits on /mcp and /api/v1, counted in Redis so every web replica sees the same counts.

Two fixed-window counters per request: the caller's credential (a hash of the bearer token, or of the
browser session) and the client address. The first one over its limit refuses the request; the answer says
when the window ends. The defaults are far above what an agent sends (hundreds of requests a second per
token), so they stop floods and runaway loops, not work.

The limiter never blocks work because it is down: without Redis (none configured, unreachable, too slow)
the request goes through and the failure is logged (`op=ratelimit.unavailable`, at most once a minute per
process). After a failure Redis is not asked again for a few seconds, so a dead Redis costs nothing.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from redis.commands.core import Script

from brain.config import overridden
from brain.logs import log_op

logger = logging.getLogger("brain.ratelimit")

_PAUSE_AFTER_FAILURE_S = 5.0
_LOG_EVERY_S = 60.0


@dataclass(frozen=True)
class RateLimits:
    """Requests allowed per window (0 turns a limit off). Environment: BRAIN_RATE_LIMIT_*."""

    window_s: int = 10
    per_token: int = 3000  # 300 requests/s per token or browser session
    per_address: int = 6000  # 600 requests/s per client address (every token behind one NAT together)


@dataclass(frozen=True)
class Limited:
    """A refused request: which limit, its size, and how long until the window ends."""

    scope: str  # "token" | "address"
    limit: int
    window_s: int
    retry_after_s: int

    @property
    def message(self) -> str:
        who = "this token" if self.scope == "token" else "this client address"
        return (f"Too many requests from {who}: the limit is {self.limit} per {self.window_s} s. "
                f"Retry in {self.retry_after_s} s")

    def details(self) -> dict[str, Any]:
        return {"retryable": True, "retryAfterSeconds": self.retry_after_s, "scope": self.scope,
                "limit": self.limit, "windowSeconds": self.window_s}


def limits() -> RateLimits:
    return overridden(RateLimits(), settings.BRAIN_RATE_LIMITS)


# One command per request: every counter is incremented, and a new one gets its expiry, atomically (a key
# can never be left without one). redis-py sends it by its SHA (EVALSHA) once Redis has it.
_INCREMENT = """
local counts = {}
for i, key in ipairs(KEYS) do
  counts[i] = redis.call('INCR', key)
  if counts[i] == 1 then redis.call('EXPIRE', key, ARGV[1]) end
end
return counts
"""


class _Backend:
    """One Redis client per URL and process (its pool is thread-safe), and the pause after a failure."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, Script] = {}
        self._paused_until: dict[str, float] = {}
        self._logged_at: dict[str, float] = {}

    def counter(self, url: str) -> Script | None:
        """The increment script bound to this URL's client, or None while paused after a failure."""
        if time.monotonic() < self._paused_until.get(url, 0.0):
            return None
        with self._lock:
            if url not in self._scripts:
                client = redis.Redis.from_url(
                    url, socket_connect_timeout=0.25, socket_timeout=0.25, health_check_interval=30)
                self._scripts[url] = client.register_script(_INCREMENT)
            return self._scripts[url]

    def failed(self, url: str, exc: Exception) -> None:
        now = time.monotonic()
        self._paused_until[url] = now + _PAUSE_AFTER_FAILURE_S
        if now - self._logged_at.get(url, -_LOG_EVERY_S) >= _LOG_EVERY_S:
            self._logged_at[url] = now
            log_op(logger, "ratelimit.unavailable", level=logging.WARNING, error=type(exc).__name__,
                   detail=str(exc)[:200], action="requests pass unlimited until Redis answers")


_BACKEND = _Backend()


def _hashed(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def rate_limit_hit(*, credential: str | None, address: str | None, path: str = "") -> Limited | None:
    """Counts one request of `credential` (a raw bearer token or session id, hashed here) from `address`;
    returns the exceeded limit, or None when the request may go on (also when Redis is unavailable)."""
    url = settings.RATE_LIMIT_REDIS_URL
    if not url:  # no Redis configured: no request rate limits (a laptop install)
        return None
    conf = limits()
    checks = [(scope, ident, cap) for scope, ident, cap in (
        ("token", _hashed(credential) if credential else None, conf.per_token),
        ("address", address, conf.per_address)) if ident and cap > 0]
    counter = _BACKEND.counter(url) if checks and conf.window_s > 0 else None
    if counter is None:
        return None
    now = time.time()
    window = int(now // conf.window_s)
    keys = [f"{settings.RATE_LIMIT_KEY_PREFIX}{scope}:{ident}:{window}" for scope, ident, _ in checks]
    try:
        counts = [int(n) for n in counter(keys=keys, args=[conf.window_s + 1])]
    except (redis.RedisError, OSError) as exc:
        _BACKEND.failed(url, exc)
        return None
    for (scope, _, cap), count in zip(checks, counts, strict=True):
        if count > cap:
            retry = max(1, math.ceil((window + 1) * conf.window_s - now))
            if count == cap + 1:  # once per window and key, so a flood does not flood the log
                log_op(logger, "ratelimit.hit", level=logging.WARNING, scope=scope, limit=cap,
                       windowS=conf.window_s, address=address, path=path)
            return Limited(scope=scope, limit=cap, window_s=conf.window_s, retry_after_s=retry)
    return None
