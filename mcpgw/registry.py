"""The tool and resource registry. Adding a tool = an input model, an output model and one handler.

    @tool(title="List projects", description="...", read_only=True)
    def brain_list_projects(principal: Principal, args: NoArguments) -> ProjectList:
        return ProjectList.of(projects_visible(principal=principal), principal)

The handler's name is the tool name; its annotated argument and return types are the pydantic models
the `inputSchema` / `outputSchema` are generated from (never written by hand).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from projects.scope import Principal

# The spec's order; tools/list follows it whatever order the modules register in.
TOOL_ORDER = (
    "brain_start_session", "brain_create_project", "brain_list_projects", "brain_get_active_project",
    "brain_retrieve_knowledge", "brain_report_session_outcome", "brain_teach_knowledge", "brain_get_user_style",
    "brain_ask_oracle", "brain_log_event", "brain_find_skill", "brain_session_search",
)


class ToolModel(BaseModel):
    """Base of tool input/output models: unknown fields are refused (additionalProperties: false)."""

    # camelCase on the wire, as the spec names its fields; snake_case in Python.
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_alias=True,
                              validate_by_name=True, serialize_by_alias=True)


class NoArguments(ToolModel):
    """For tools that take no arguments."""


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_model: type[ToolModel]
    output_model: type[ToolModel]
    handler: Callable[[Principal, Any], ToolModel]
    read_only: bool
    idempotent: bool
    destructive: bool

    def definition(self) -> dict[str, Any]:
        """The tools/list entry."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": _schema(self.input_model, "validation"),
            "outputSchema": _schema(self.output_model, "serialization"),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            },
        }


@dataclass(frozen=True)
class Resource:
    uri: str
    name: str
    title: str
    description: str
    reader: Callable[[Principal], Any]
    mime_type: str = "application/json"

    def definition(self) -> dict[str, Any]:
        return {"uri": self.uri, "name": self.name, "title": self.title, "description": self.description,
                "mimeType": self.mime_type}

    def read(self, principal: Principal) -> dict[str, Any]:
        value = self.reader(principal)
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return {"uri": self.uri, "mimeType": self.mime_type, "text": text}


def _untitled(node: Any) -> Any:
    """Drops pydantic's generated titles ("Projectid") from every schema node; the tool has its own."""
    if isinstance(node, list):
        return [_untitled(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}  # names, not keywords
        elif key != "title" or not isinstance(value, str):
            out[key] = _untitled(value)
    return out


def _schema(model: type[BaseModel], mode: Any) -> dict[str, Any]:
    schema: dict[str, Any] = _untitled(model.model_json_schema(by_alias=True, mode=mode))
    schema.pop("description", None)  # the model's docstring is for Python readers
    schema.setdefault("properties", {})
    return schema


class Registry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}

    def add_tool(self, entry: Tool) -> Tool:
        if entry.name in self._tools:
            raise ValueError(f"tool {entry.name} is registered twice")
        self._tools[entry.name] = entry
        return entry

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def tools(self) -> list[Tool]:
        rank = {name: i for i, name in enumerate(TOOL_ORDER)}
        return sorted(self._tools.values(), key=lambda t: (rank.get(t.name, len(rank)), t.name))

    def add_resource(self, entry: Resource) -> Resource:
        if entry.uri in self._resources:
            raise ValueError(f"resource {entry.uri} is registered twice")
        self._resources[entry.uri] = entry
        return entry

    def remove_resource(self, uri: str) -> None:
        self._resources.pop(uri, None)

    def resource(self, uri: str) -> Resource | None:
        return self._resources.get(uri)

    def resources(self) -> list[Resource]:
        return sorted(self._resources.values(), key=lambda r: r.uri)


REGISTRY = Registry()
F = TypeVar("F", bound=Callable[..., Any])


def tool(*, title: str, description: str, read_only: bool, idempotent: bool | None = None,
         destructive: bool = False) -> Callable[[F], F]:
    """Registers the decorated handler as a tool named after the function."""

    def register(handler: F) -> F:
        hints = get_type_hints(handler)
        params = [hints[name] for name in handler.__code__.co_varnames[: handler.__code__.co_argcount]]
        REGISTRY.add_tool(Tool(
            name=handler.__name__, title=title, description=description, input_model=params[1],
            output_model=hints["return"], handler=handler, read_only=read_only,
            idempotent=read_only if idempotent is None else idempotent, destructive=destructive,
        ))
        return handler

    return register
