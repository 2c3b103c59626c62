"""A session open never waits for the model in a transaction: when the search could not embed the prompt (the
embedder failed), the prompt event commits without a vector and gets it from the batcher after the commit.

The embedder is a local HTTP server speaking OpenAI's /v1/embeddings that fails its first request; on every
request it looks, from its own database connection, for the session being opened. A model call made inside a
transaction that stores it would not see it (not committed yet)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from knowledge.embeddings import memo_clear
from sessions.models import Session, SessionEvent
from sessions.services.event_vectors import EVENT_BATCHER
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, call_tool
from tests.support.fake_embedder import answer_embeddings

pytestmark = pytest.mark.django_db(transaction=True)
PROMPT = "migrate the billing cron job to the new queue"


class _FailsFirst(BaseHTTPRequestHandler):
    failures = 1
    sessions_seen: list[int] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).sessions_seen.append(Session.objects.filter(prompt=PROMPT).count())  # committed rows only
        connections.close_all()  # this thread's connection must not outlive the test database
        if type(self).failures > 0:
            type(self).failures -= 1
            self.send_response(500)
            self.end_headers()
            return
        answer_embeddings(self, body["model"], [{"object": "embedding", "index": i, "embedding": [0.5] * 384}
                                                for i, _ in enumerate(body["input"])])

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def flaky_embedder(settings: Any) -> Iterator[type[_FailsFirst]]:
    server = HTTPServer(("127.0.0.1", 0), _FailsFirst)
    _FailsFirst.failures, _FailsFirst.sessions_seen = 1, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.BRAIN_EMBEDDINGS_PROVIDER = "openai"
    settings.BRAIN_EMBEDDINGS_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
    settings.BRAIN_EMBEDDINGS_API_KEY = "sk-test"
    settings.BRAIN_EMBEDDINGS_MODEL = "flaky-embedder"
    settings.BRAIN_EMBEDDINGS_DIMENSIONS = 384
    memo_clear()
    yield _FailsFirst
    assert EVENT_BATCHER.flush(timeout=60)
    server.shutdown()
    server.server_close()


def test_an_open_whose_search_could_not_embed_commits_first_and_embeds_after(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, flaky_embedder: type[_FailsFirst]
) -> None:
    opened = call_tool(Mcp(client, tenant_a.user_raw), "brain_start_session", {"clientType": "t", "prompt": PROMPT})
    assert not opened.get("isError"), opened
    sid = opened["structuredContent"]["sessionId"]
    assert EVENT_BATCHER.flush(timeout=60)
    event = SessionEvent.objects.get(session_id=sid, event_type="prompt")
    assert event.embedding is not None and event.embedding_model == "openai:flaky-embedder"  # from the batcher
    # The search's call failed (the session is stored beside it, so it may or may not see it yet); the batcher's
    # call came after the commit and saw it.
    assert flaky_embedder.sessions_seen[0] in (0, 1) and flaky_embedder.sessions_seen[1:] == [1]
    assert not Session.objects.filter(user=tenant_b.user).exists()
