"""`clientRequestId` on the creating tools: a retried call with the same id answers the first result and
stores nothing new (the rule lives in projects.services.idempotency; this maps tool models onto it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mcpgw.registry import ToolModel
from projects.scope import Principal
from projects.services.idempotency import Answer, idempotent_write, request_fingerprint

Out = TypeVar("Out", bound=ToolModel)


def once(principal: Principal, tool: str, args: ToolModel, out: type[Out], run: Callable[[], Out]) -> Out:
    """Runs the tool's write, or replays its first result when args.client_request_id was seen before."""
    key = getattr(args, "client_request_id", None)
    if not key:
        return run()
    fingerprint = request_fingerprint(args.model_dump(mode="json", exclude={"client_request_id"}))

    def write() -> Answer:
        return Answer(status=200, body=run().model_dump(mode="json", by_alias=True))

    answer = idempotent_write(principal=principal, scope=tool, key=key, fingerprint=fingerprint, run=write)
    return out.model_validate(answer.body)
