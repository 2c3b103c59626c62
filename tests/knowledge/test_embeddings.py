"""Embedders: the real local MiniLM model, and the OpenAI wire format against a local fake server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import numpy as np
import pytest

from knowledge.embeddings import (
    DIMENSIONS,
    LOCAL_MODEL_NAME,
    NARROW_TOKENS,
    EmbeddingUnavailable,
    LocalEmbedder,
    OpenAIEmbedder,
    embed_query_soon,
    embed_texts,
    embedder_health,
    get_embedder,
)
from knowledge.search_vector import vector_literal
from tests.support.fake_embedder import answer_embeddings


def test_local_model_embeds_offline_with_unit_vectors_that_capture_meaning() -> None:
    vectors, model = embed_texts([
        "Use react-hook-form with zod for forms",
        "Build React forms with react-hook-form and zod validation",
        "The banana bread needs two ripe bananas",
    ])
    assert model == LOCAL_MODEL_NAME
    matrix = np.array(vectors)
    assert matrix.shape == (3, DIMENSIONS)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
    similar, unrelated = matrix[0] @ matrix[1], matrix[0] @ matrix[2]
    assert similar > 0.6 > unrelated + 0.3


def test_a_texts_vector_never_depends_on_what_it_was_embedded_with() -> None:
    # The int8 products scale their inputs per model call: a batch would mix its texts' scales (fails if the
    # local embedder goes back to padded batches: single and batched vectors then differ by ~1e-2).
    long_text = " ".join(f"migration step {n} rewrites the index of table t{n}" for n in range(60))
    texts = ["short", long_text, "a considerably longer sentence about database migrations and indexes",
             long_text[:300], "mid length text"]
    embedder = get_embedder()
    batch = np.array(embedder.embed(texts))  # one text per core at once, each on a single-threaded session
    assert np.allclose(batch, np.array([embedder.embed([text])[0] for text in texts]), atol=1e-6)  # all threads
    assert np.array_equal(batch, np.array(embedder.embed(list(reversed(texts)))[::-1]))
    # The vector batchers' embedder (lowered-priority threads) gives the request threads' vectors.
    assert np.allclose(batch, np.array(get_embedder(background=True).embed(texts)), atol=1e-6)
    assert get_embedder() is get_embedder()  # loaded once per process


class _Counted:
    """An onnxruntime session that counts its runs (the real session does the work)."""

    def __init__(self, session: Any) -> None:
        self.session, self.runs = session, 0

    def run(self, *args: Any) -> Any:
        self.runs += 1
        return self.session.run(*args)


def test_a_short_query_runs_on_one_thread_and_a_long_one_on_every_core() -> None:
    # A short query's second thread would only take the core the search's full-text statement runs on meanwhile.
    embedder = LocalEmbedder(threads=2)
    narrow, wide = _Counted(embedder._narrow), _Counted(embedder._session)
    embedder._narrow, embedder._session = narrow, wide
    short = embedder.embed(["fix the failing login test"])
    assert (narrow.runs, wide.runs) == (1, 0)
    embedder.embed([" ".join(f"step {n} of the schema migration" for n in range(NARROW_TOKENS))])
    assert (narrow.runs, wide.runs) == (1, 1)
    assert np.array_equal(short, get_embedder(background=True).embed(["fix the failing login test"]))


def test_a_query_is_embedded_and_written_as_its_sql_literal_on_a_pool_thread() -> None:
    # The request's thread waits for the full-text statement meanwhile: the literal is made where the vector is.
    threads: list[str] = []

    def literal(vector: list[float]) -> str:
        threads.append(threading.current_thread().name)
        return vector_literal(vector)

    text, model = embed_query_soon("fix the failing login test", literal).result(timeout=60)
    assert model == LOCAL_MODEL_NAME and threads and threads[0].startswith("query-embed")
    assert text == vector_literal(embed_texts(["fix the failing login test"])[0][0])


def test_the_batchers_and_the_requests_run_one_session_of_the_model() -> None:
    # A run after the batcher's is served from the weights its run left in the caches; a session each made a query
    # embedded after a batch about 0.2-0.5 ms slower (fails if either embedder loads the model file for itself).
    requests, batchers = get_embedder(), get_embedder(background=True)
    assert isinstance(requests, LocalEmbedder) and isinstance(batchers, LocalEmbedder) and requests is not batchers
    assert requests._narrow is batchers._narrow and batchers._session is batchers._narrow


def test_none_provider_refuses_and_doctor_says_fts_only(settings: Any) -> None:
    settings.BRAIN_EMBEDDINGS_PROVIDER = "none"
    with pytest.raises(EmbeddingUnavailable, match="turned off"):
        embed_texts(["x"])
    ok, detail = embedder_health()
    assert ok and "full-text" in detail


def test_doctor_reports_the_local_model() -> None:
    ok, detail = embedder_health()
    assert ok and LOCAL_MODEL_NAME in detail and "384" in detail


class _FakeOpenAI(BaseHTTPRequestHandler):
    """Speaks POST /v1/embeddings like OpenAI: `data` items with `index` (sent in reverse order here)."""

    requests: list[dict[str, Any]] = []
    dims = 384

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            return
        data = [{"object": "embedding", "index": i, "embedding": [float(i + 1)] * self.dims}
                for i, _ in enumerate(body["input"])]
        answer_embeddings(self, body["model"], data[::-1])

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def fake_openai() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    _FakeOpenAI.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _client(url: str, model: str = "text-embedding-3-small", dims: int = 384) -> OpenAIEmbedder:
    return OpenAIEmbedder(base_url=url, api_key="sk-test", model=model, dimensions=dims, timeout_s=5, batch_size=2)


def test_openai_provider_speaks_the_wire_format_in_batches(fake_openai: str) -> None:
    vectors = _client(fake_openai).embed(["a", "b", "c"])
    assert [r["path"] for r in _FakeOpenAI.requests] == ["/v1/embeddings", "/v1/embeddings"]
    assert _FakeOpenAI.requests[0]["auth"] == "Bearer sk-test"
    assert _FakeOpenAI.requests[0]["body"] == {"model": "text-embedding-3-small", "input": ["a", "b"]}
    assert len(vectors) == 3
    assert np.allclose(np.linalg.norm(np.array(vectors), axis=1), 1.0)


def test_openai_provider_failures_become_embedding_unavailable(fake_openai: str) -> None:
    with pytest.raises(EmbeddingUnavailable, match="failed"):
        _client(fake_openai, model="broken").embed(["a"])
    with pytest.raises(EmbeddingUnavailable, match="BRAIN_EMBEDDINGS_DIMENSIONS"):
        _client(fake_openai, dims=768).embed(["a"])
    with pytest.raises(EmbeddingUnavailable, match="failed"):
        _client("http://127.0.0.1:9/v1").embed(["a"])


def test_openai_provider_is_chosen_by_settings(settings: Any, fake_openai: str) -> None:
    settings.BRAIN_EMBEDDINGS_PROVIDER = "openai"
    settings.BRAIN_EMBEDDINGS_BASE_URL = fake_openai
    settings.BRAIN_EMBEDDINGS_MODEL = "nomic-embed-text"
    vectors, model = embed_texts(["hello"])
    assert model == "openai:nomic-embed-text" and len(vectors[0]) == 384


def test_a_single_text_embedded_twice_costs_one_model_call(monkeypatch) -> None:
    from knowledge import embeddings

    embedder = embeddings.get_embedder()
    calls: list[int] = []
    original = embedder.embed

    def counting(texts):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return original(texts)

    monkeypatch.setattr(embedder, "embed", counting)
    text = "use react-hook-form with zod for forms in this repo (memo test)"
    first, _ = embeddings.embed_query(text)
    second, _ = embeddings.embed_query(text)
    assert first == second and calls == [1]
    embeddings.embed_texts([text, "another text"])  # batches are not memoised
    assert calls == [1, 2]
