"""Reading JSON out of model replies: fenced blocks, prose around the JSON, or nothing usable."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


class MalformedReply(ValueError):
    """The model's reply holds no JSON of the expected shape."""


def parse_json_reply(text: str) -> Any:
    """The first JSON value in a reply: inside a ``` fence when there is one, else the outermost [...] or {...}."""
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    for candidate in candidates:
        candidate = candidate.strip()
        for opener, closer in (("[", "]"), ("{", "}")):
            start, end = candidate.find(opener), candidate.rfind(closer)
            if start == -1 or end <= start:
                continue
            try:
                return json.loads(candidate[start:end + 1])
            except json.JSONDecodeError:
                continue
    raise MalformedReply(f"no JSON found in the model reply ({len(text)} characters)")


def json_list(text: str, key: str) -> list[dict[str, Any]]:
    """A list of objects from a reply that is either that list or an object holding it under `key`."""
    value = parse_json_reply(text)
    if isinstance(value, dict):
        value = value.get(key)
    if not isinstance(value, list):
        raise MalformedReply(f"expected a JSON list (or {{\"{key}\": [...]}}) in the model reply")
    return [item for item in value if isinstance(item, dict)]
