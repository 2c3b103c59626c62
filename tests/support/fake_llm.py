"""A local HTTP server speaking the OpenAI chat-completions and Anthropic messages wire formats."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeLlm:
    reply: str = "ok"
    fail_first: int = 0  # answer 503 to this many requests before succeeding
    status: int = 200
    delay_s: float = 0.0  # wait this long before answering (a slow provider; a worker to kill mid-call)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""


def _handler(fake: FakeLlm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            if fake.delay_s:
                time.sleep(fake.delay_s)
            if len(fake.requests) <= fake.fail_first:
                return self._send(503, {"error": {"message": "overloaded"}})
            if fake.status != 200:
                return self._send(fake.status, {"error": {"message": "nope"}})
            if self.path.endswith("/v1/messages"):
                payload = {"type": "message", "role": "assistant", "model": body["model"],
                           "content": [{"type": "text", "text": fake.reply}], "stop_reason": "end_turn"}
            else:
                payload = {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": fake.reply}}]}
            return self._send(200, payload)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client timed out first
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

    return Handler


@contextmanager
def fake_llm_server(fake: FakeLlm | None = None) -> Iterator[FakeLlm]:
    fake = fake or FakeLlm()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
