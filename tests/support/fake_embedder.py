"""The answer of an OpenAI-compatible `/v1/embeddings` endpoint, for the tests' local fake servers."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def answer_embeddings(handler: BaseHTTPRequestHandler, model: str, data: list[dict[str, Any]]) -> None:
    """Writes a 200 with `data` (items of `object`, `index`, `embedding`) as OpenAI sends it."""
    payload = json.dumps({"object": "list", "data": data, "model": model,
                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
