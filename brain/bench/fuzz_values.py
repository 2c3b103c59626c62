"""Hypothesis strategies for hostile JSON values, and arguments generated from a JSON schema.

Shared by the CI hostile-input suite (tests/…/test_*_hostile.py) and `brain bench fuzz`, so the long run
and the short one send the same kinds of input. Values are Python JSON values plus `Raw`, JSON text sent
verbatim: nesting too deep for any encoder, `NaN`, `1e999`, numbers no float holds. `dump` writes them
with every non-ASCII character escaped, so a lone surrogate travels as the valid JSON escape `\\ud800`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import strategies as st

# Strings a text column cannot hold (NUL, lone surrogates) and a few that confuse renderers.
NASTY_TEXT = ["\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d", "", " ", "\u202e", "\ufeff", "\r\n", "<script>",
              "'; DROP TABLE x; --", "%s%n", "../../etc/passwd", "\\", '"', "${jndi:x}", "null"]
EDGE_NUMBERS: list[Any] = [0, -1, 1, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**30, 1e308, -1e308, 0.5,
                           -0.0, 1e-320, True, False, None]


@dataclass(frozen=True)
class Raw:
    """JSON text inserted verbatim by `dump`."""

    text: str


def dump(value: Any) -> str:
    """JSON text of a value that may hold `Raw` parts; non-ASCII (surrogates included) is escaped."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value)


def _deep(depth: int, kind: str) -> Raw:
    if kind == "list":
        return Raw("[" * depth + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


@cache
def surrogate_text() -> st.SearchStrategy[str]:
    """Text with lone surrogates (st.text leaves them out by default)."""
    return st.text(st.characters(categories=["Cs", "L", "Cc"]), min_size=1, max_size=8)


@cache
def hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NASTY_TEXT),
        surrogate_text(),
        st.text(st.characters(codec="utf-8"), max_size=40),
        st.builds(lambda s, n: s * n, st.sampled_from(["A", "é", "\x00", "😀 ", "ab\ud800"]),
                  st.integers(1_000, 120_000)),
    )


@cache
def hostile_value() -> st.SearchStrategy[Any]:
    """One value of any shape that a careless handler might choke on."""
    scalars = st.one_of(hostile_text(), st.sampled_from(EDGE_NUMBERS), st.integers(), st.floats(allow_nan=False))
    return st.one_of(
        scalars,
        st.sampled_from([Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e999"), Raw("-1e999"),
                         Raw("1" * 400), Raw("0." + "0" * 400 + "1")]),
        st.builds(_deep, st.integers(30, 3_000), st.sampled_from(["list", "dict"])),
        st.lists(scalars, max_size=4),
        st.dictionaries(hostile_text(), scalars, max_size=3),
        st.integers(1_000, 60_000).map(lambda n: Raw("[" + ",".join(["1"] * n) + "]")),
    )


@cache
def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False,
                       allow_infinity=False), st.text(max_size=20))
    return st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                        max_leaves=max_leaves)


class SchemaValues:
    """Valid values for a JSON schema (the subset pydantic and django-ninja emit), with `$ref` resolved
    against `root`. String properties whose name ends in `Id`/`_id` also draw from `ids`: real rows of
    both tenants, so the fuzz reaches handlers with existing ids, including another tenant's."""

    def __init__(self, root: dict[str, Any], ids: list[str]) -> None:
        self.root, self.ids = root, ids

    def _resolve(self, ref: str) -> dict[str, Any]:
        node: Any = self.root
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return dict(node)

    def of(self, schema: dict[str, Any], name: str = "") -> st.SearchStrategy[Any]:
        if "$ref" in schema:
            return self.of(self._resolve(schema["$ref"]), name)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return st.one_of([self.of(sub, name) for sub in schema[key]])
        if "allOf" in schema and len(schema["allOf"]) == 1:
            return self.of(schema["allOf"][0], name)
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        kind = schema.get("type")
        if isinstance(kind, list):
            return st.one_of([self.of({**schema, "type": k}, name) for k in kind])
        builder = {"string": self._string, "integer": self._integer, "number": self._number,
                   "boolean": lambda s, n: st.booleans(), "null": lambda s, n: st.none(),
                   "array": self._array, "object": self._object}.get(str(kind))
        return builder(schema, name) if builder else json_values()

    def _string(self, schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
        if schema.get("format") == "date-time":
            return st.datetimes().map(lambda d: d.isoformat() + "Z")
        if schema.get("format") == "uuid":
            return st.uuids().map(str)
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: 0 < len(s) <= 200)
        low = int(schema.get("minLength", 0))
        text = st.text(min_size=low, max_size=max(low, min(int(schema.get("maxLength", 60)), 60)))
        if self.ids and (name.endswith(("Id", "_id")) or name == "id"):
            return st.one_of(st.sampled_from(self.ids), text)
        return text

    def _integer(self, schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
        return st.integers(schema.get("minimum"), schema.get("maximum"))

    def _number(self, schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)

    def _array(self, schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
        items = self.of(schema.get("items", {}), name)
        return st.lists(items, min_size=int(schema.get("minItems", 0)), max_size=min(int(schema.get("maxItems", 4)), 4))

    def _object(self, schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = st.fixed_dictionaries({k: self.of(v, k) for k, v in props.items() if k in required},
                                      optional={k: self.of(v, k) for k, v in props.items() if k not in required})
        if schema.get("additionalProperties") is True or (not props and "additionalProperties" not in schema):
            extra = st.dictionaries(st.text(max_size=10), json_values(), max_size=3)
            return st.tuples(extra, fixed).map(lambda pair: {**pair[0], **pair[1]})
        return fixed


def _spots(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every place a value could be replaced (containers' members), the root first."""
    out = [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            out += _spots(sub, (*path, key))
        out.append((*path, "\x00new"))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += _spots(sub, (*path, i))
    return out


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        key = f"extra{len(value)}" if head == "\x00new" else head
        return {**value, key: _replaced(value.get(key), rest, new)}
    copy = list(value)
    copy[head] = _replaced(copy[head], rest, new)
    return copy


def poked(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value with one member (or the whole) replaced by a hostile one."""
    return valid.flatmap(lambda v: st.tuples(st.sampled_from(_spots(v)), hostile_value()).map(
        lambda spot: _replaced(v, spot[0], spot[1])))


_BUILT: dict[tuple[int, int], st.SearchStrategy[Any]] = {}


def arguments_for(schema: dict[str, Any], ids: list[str]) -> st.SearchStrategy[Any]:
    """Arguments for one tool (or body for one operation): valid, valid but for one hostile member, or any.
    Built once per schema: hypothesis validates a strategy on first use, which costs more than a draw."""
    key = (id(schema), id(ids))
    if key not in _BUILT:
        valid = SchemaValues(schema, ids).of(schema)
        _BUILT[key] = st.one_of(valid, poked(valid), hostile_value())
    return _BUILT[key]
