"""A small forwarding proxy that adds a bearer header: the conformance suite cannot send one itself.

Everything else (method, path, Host, Origin, MCP headers, body) is passed through unchanged, so the
server sees exactly what the suite sent, plus Authorization.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


def _handler(upstream: str, token: str) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP | {"authorization", "content-length"}:
                    conn.putheader(name, value)
            conn.putheader("Authorization", f"Bearer {token}")
            conn.putheader("Content-Length", str(len(body or b"")))
            conn.endheaders(body)
            response = conn.getresponse()
            payload = response.read()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP | {"content-length"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            conn.close()

        do_GET = do_POST = do_DELETE = do_PUT = _forward  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Forward


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients under test drop connections on purpose; the server's answer is what is checked


@contextmanager
def bearer_proxy(upstream: str, token: str) -> Iterator[str]:
    """Yields the proxy's base URL (http://127.0.0.1:<port>) for as long as the block runs."""
    server = _QuietServer(("127.0.0.1", 0), _handler(upstream, token))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
