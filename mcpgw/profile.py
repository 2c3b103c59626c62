"""Tool profiles: which registry an endpoint lists and calls. `/mcp` serves the brain tools; another
endpoint (e.g. `/mcp/cognibrain`) runs the same transport inside `profile(...)` with its own registry."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from mcpgw.registry import REGISTRY, Registry

_ACTIVE: ContextVar[Registry] = ContextVar("mcp_profile", default=REGISTRY)


def active_registry() -> Registry:
    return _ACTIVE.get()


@contextmanager
def profile(registry: Registry) -> Iterator[None]:
    token = _ACTIVE.set(registry)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
