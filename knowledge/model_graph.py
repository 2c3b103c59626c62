"""Rewrites of the local model's int8 graph into onnxruntime's fused operators, for texts run one at a time.

The wheel's export spells attention out as a dozen nodes per layer (reshapes and transposes into heads, the
scale applied to both sides, the padding mask added to the scores, softmax, a NaN guard after it, the product
with the values, a transpose back) and GELU as five. onnxruntime runs each node as its own pass over the
activations, and at 256 tokens those passes, not the int8 products, took most of a run. Here each layer's
attention becomes one `com.microsoft.MultiHeadAttention` and each GELU one `com.microsoft.Gelu`: the same
arithmetic in float32, in fewer passes (a 256-token text 40 -> 26 ms, a 16-token one 3.8 -> 1.9 ms on one
core; docs/benchmarks.md, issue 17, nineteenth pass).

The fused attention takes no padding mask. The embedder never pads (one text per call, every token real), so the
mask it feeds is all ones, which added nothing to the scores. A graph that does not have the expected shape
raises `UnexpectedGraph` and the caller keeps the graph as it was.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import onnx
from onnx import NodeProto, helper, numpy_helper

from knowledge.embeddings import DIMENSIONS

HEADS = 12  # all-MiniLM-L6-v2: its DIMENSIONS (384) in 12 heads of 32
LAYERS = 6
CONTRIB = "com.microsoft"
# Between a projection (its bias Add) and the attention product, only the split into heads and the scale.
_HEAD_SPLIT = {"Reshape", "Transpose", "Mul"}


class UnexpectedGraph(ValueError):
    """The graph is not the export these rewrites were written for."""


def fuse(model: onnx.ModelProto) -> None:
    """Rewrite `model` in place: every attention and every GELU fused; dead nodes dropped."""
    graph = model.graph
    if fuse_attention(graph) != LAYERS or fuse_gelu(graph) != LAYERS:
        raise UnexpectedGraph(f"expected {LAYERS} attention and GELU blocks")
    _sort(graph)
    _prune(graph)
    if not any(opset.domain == CONTRIB for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(CONTRIB, 1))


def fuse_attention(graph: onnx.GraphProto) -> int:
    """Each softmax's block (scores, mask, softmax, NaN guard, values, heads merged) as one node."""
    producers, users = _producers(graph), _users(graph)
    blocks = [node for node in graph.node if node.op_type == "Softmax"]
    for index, softmax in enumerate(blocks):
        scores = _producer(producers, softmax.input[0])
        if scores.op_type == "Add":  # the padding mask
            scores = _producer(producers, scores.input[0])
        _expect(scores, "MatMul")
        query = _projection(producers, scores.input[0])
        key = _projection(producers, scores.input[1])
        _check_scale(graph, producers, scores.input[0])
        weighted = _following(users, _past_nan_guard(users, softmax.output[0]), "MatMul")
        value = _projection(producers, weighted.input[1])
        merged = _following(users, weighted.output[0], "Reshape")  # heads back into one row per token
        fused = f"fused_attention_{index}"
        graph.node.append(helper.make_node("MultiHeadAttention", [query, key, value], [fused], domain=CONTRIB,
                                           num_heads=HEADS, name=fused))
        _rename_uses(graph, merged.output[0], fused)
    return len(blocks)


def fuse_gelu(graph: onnx.GraphProto) -> int:
    """x * 0.5 * (1 + erf(x / sqrt 2)), written as Div, Erf, Add, Mul, Mul, as one node."""
    producers, users = _producers(graph), _users(graph)
    blocks = [node for node in graph.node if node.op_type == "Erf"]
    for index, erf in enumerate(blocks):
        divide = _expect(_producer(producers, erf.input[0]), "Div")
        x = divide.input[0]
        last = _following(users, erf.output[0], "Mul")
        last = _expect(_single(users, last.output[0]), "Mul")
        if x not in last.input:
            raise UnexpectedGraph(f"GELU at {erf.name or index}: its last product is not with its input")
        fused = f"fused_gelu_{index}"
        graph.node.append(helper.make_node("Gelu", [x], [fused], domain=CONTRIB, name=fused))
        _rename_uses(graph, last.output[0], fused)
    return len(blocks)


def _projection(producers: dict[str, NodeProto], name: str) -> str:
    """The tensor a query, key or value path starts from: back through the head split to the bias Add."""
    node = _producer(producers, name)
    while node.op_type in _HEAD_SPLIT:
        node = _producer(producers, node.input[0])
    return _expect(node, "Add").output[0]


def _check_scale(graph: onnx.GraphProto, producers: dict[str, NodeProto], query: str) -> None:
    """The export scales query and key each by head_size ** -0.25; the fused node's default is their product."""
    constants = {item.name: item for item in graph.initializer}
    scale = _expect(_producer(producers, query), "Mul")
    factor = next((constants[name] for name in scale.input if name in constants), None)
    head_size = DIMENSIONS // HEADS
    if factor is None or not math.isclose(float(numpy_helper.to_array(factor)) ** 2, head_size ** -0.5,
                                          rel_tol=1e-5):
        raise UnexpectedGraph("attention scale is not 1 / sqrt(head size)")


def _past_nan_guard(users: dict[str, list[NodeProto]], name: str) -> str:
    """Where(IsNaN(p), 0, p) after the softmax: p's guarded name (a row is NaN only when fully masked)."""
    found = users.get(name, [])
    if sorted(node.op_type for node in found) != ["IsNaN", "Where"]:
        return name
    return next(node for node in found if node.op_type == "Where").output[0]


def _following(users: dict[str, list[NodeProto]], name: str, op_type: str) -> NodeProto:
    """The first node of `op_type` down a single-user chain from `name`."""
    node = _single(users, name)
    while node.op_type != op_type:
        node = _single(users, node.output[0])
    return node


def _producer(producers: dict[str, NodeProto], name: str) -> NodeProto:
    if name not in producers:
        raise UnexpectedGraph(f"{name} is an input or a constant, expected a node's output")
    return producers[name]


def _single(users: dict[str, list[NodeProto]], name: str) -> NodeProto:
    found = users.get(name, [])
    if len(found) != 1:
        raise UnexpectedGraph(f"{name} has {len(found)} users, expected one")
    return found[0]


def _expect(node: NodeProto, op_type: str) -> NodeProto:
    if node.op_type != op_type:
        raise UnexpectedGraph(f"{node.name or node.output[0]} is {node.op_type}, expected {op_type}")
    return node


def _producers(graph: onnx.GraphProto) -> dict[str, NodeProto]:
    return {output: node for node in graph.node for output in node.output}


def _users(graph: onnx.GraphProto) -> dict[str, list[NodeProto]]:
    users: dict[str, list[NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    return users


def _rename_uses(graph: onnx.GraphProto, old: str, new: str) -> None:
    for node in graph.node:
        for position, name in enumerate(node.input):
            if name == old:
                node.input[position] = new


def _sort(graph: onnx.GraphProto) -> None:
    """Topological order (the fused nodes were appended at the end); stable, so the bytes are deterministic."""
    ready = {item.name for item in graph.input} | {item.name for item in graph.initializer} | {""}
    pending, ordered = list(graph.node), []
    while pending:
        waiting = []
        for node in pending:
            if all(name in ready for name in node.input):
                ordered.append(node)
                ready.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            raise UnexpectedGraph("the rewritten graph has a cycle or a missing input")
        pending = waiting
    _replace(graph.node, ordered)


def _prune(graph: onnx.GraphProto) -> None:
    """Drop the nodes and constants no output depends on any more (the replaced blocks, the mask's)."""
    needed = {item.name for item in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    _replace(graph.node, reversed(kept))
    _replace(graph.initializer, [item for item in graph.initializer if item.name in needed])


def _replace(field: Any, items: Iterable[Any]) -> None:
    """Refill a repeated protobuf field (it cannot be assigned)."""
    kept = list(items)
    del field[:]
    field.extend(kept)
