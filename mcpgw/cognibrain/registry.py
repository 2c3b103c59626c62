"""The Cognibrain tool registry: same Tool entries and schema generation as the brain tools, its own set."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

from mcpgw.registry import Registry, Tool

ORDER = (
    "cognibrain_context", "cognibrain_coding_context", "cognibrain_guard", "cognibrain_memory_add",
    "cognibrain_correction", "cognibrain_patch_evidence", "cognibrain_health", "cognibrain_outcome",
    "cognibrain_session_end",
)


class CognibrainRegistry(Registry):
    def tools(self) -> list[Tool]:
        rank = {name: i for i, name in enumerate(ORDER)}
        return sorted(super().tools(), key=lambda t: (rank.get(t.name, len(rank)), t.name))


COGNIBRAIN = CognibrainRegistry()
F = TypeVar("F", bound=Callable[..., Any])


def cognibrain_tool(
    *, title: str, description: str, read_only: bool, idempotent: bool | None = None,
) -> Callable[[F], F]:
    """Registers the decorated handler in the Cognibrain profile, named after the function."""

    def register(handler: F) -> F:
        hints = get_type_hints(handler)
        params = [hints[name] for name in handler.__code__.co_varnames[: handler.__code__.co_argcount]]
        COGNIBRAIN.add_tool(Tool(
            name=handler.__name__, title=title, description=description, input_model=params[1],
            output_model=hints["return"], handler=handler, read_only=read_only,
            idempotent=read_only if idempotent is None else idempotent, destructive=False,
        ))
        return handler

    return register
