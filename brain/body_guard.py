"""A request body the application did not read must not become the next request on the connection.

Refusals answered before reading the body (413 over the size cap, 401 without a token, 403 for an
Origin) leave its bytes on a keep-alive connection; the server would parse them as the next request
and the client's real next request is lost. This WSGI wrapper settles the connection when the answer
starts: a remainder up to DRAIN_MAX_BYTES is read and discarded (the connection stays usable), a larger
one (or one of unknown length) closes the connection after the answer: gunicorn (the web replicas) is told to
and says `Connection: close`; granian (`brain serve`) closes a connection whose body was left unread by itself.
A chunked body (no Content-Length) is read whole first and handed on with its length, since Django reads
nothing of a body of unknown length.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterable
from typing import Any

from brain.logs import log_op

logger = logging.getLogger("brain.http")
DRAIN_MAX_BYTES = 4 * 1024 * 1024  # reading more to keep one connection alive costs more than reconnecting
# A chunked body is read whole before the application sees it; past this, only this much (+1) is kept, which
# every view's own cap refuses in its own format. The largest legitimate body is an import of a few rule files.
CHUNKED_MAX_BYTES = 32 * 1024 * 1024
_CHUNK = 64 * 1024

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class CountingInput:
    """wsgi.input that remembers how many bytes the application read and whether it reached the end."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.read_bytes, self.at_end = stream, 0, False

    def _seen(self, data: bytes, asked: int | None) -> bytes:
        self.read_bytes += len(data)
        if not data or asked is None or asked < 0:  # an empty read, or "read everything"
            self.at_end = True
        return bytes(data)

    def read(self, size: int | None = None, *args: Any) -> bytes:
        data = self.stream.read() if size is None else self.stream.read(size, *args)
        return self._seen(data, size)

    def readline(self, *args: Any) -> bytes:
        data = self.stream.readline(*args)
        if not data:
            self.at_end = True
        self.read_bytes += len(data)
        return bytes(data)

    def readlines(self, *args: Any) -> list[bytes]:
        lines = list(self.stream.readlines(*args))
        self.read_bytes += sum(len(line) for line in lines)
        self.at_end = True
        return lines

    def __iter__(self) -> Any:
        return iter(self.readline, b"")


def _declared_length(environ: dict[str, Any]) -> int | None:
    try:
        return int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


def _drain(body: CountingInput, remaining: int | None) -> bool:
    """Reads and discards what is left (known length up to the cap, else until the end); True when done."""
    budget = DRAIN_MAX_BYTES
    while budget > 0 and (remaining is None or remaining > 0):
        want = min(_CHUNK, budget) if remaining is None else min(_CHUNK, remaining)
        data = body.read(want)
        if not data:
            return True
        budget -= len(data)
        if remaining is not None:
            remaining -= len(data)
    return remaining == 0


def _settle(environ: dict[str, Any], body: CountingInput, start_response: StartResponse) -> None:
    declared = None if _is_chunked(environ) else _declared_length(environ)
    if body.at_end or (declared is not None and body.read_bytes >= declared):
        return
    remaining = None if declared is None else declared - body.read_bytes
    if remaining is not None and remaining <= DRAIN_MAX_BYTES:
        try:
            if _drain(body, remaining):
                return
        except OSError:
            pass  # the client went away or stalled: closing is all that is left
    server_response = getattr(start_response, "__self__", None)  # gunicorn's Response
    if server_response is not None and hasattr(server_response, "force_close"):
        server_response.force_close()
    log_op(logger, "http.body_unread", path=environ.get("PATH_INFO", ""), declared=declared,
           read=body.read_bytes, closed=server_response is not None)


def _is_chunked(environ: dict[str, Any]) -> bool:
    return "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()


def _chunked_cap(environ: dict[str, Any]) -> int:
    """How much of a chunked body is held: an MCP message's own cap on /mcp (a stranger's body is read before the
    token is checked, so it must not cost more memory there than a declared one would), CHUNKED_MAX_BYTES else."""
    from django.conf import settings

    path = str(environ.get("PATH_INFO", ""))
    return int(settings.MCP_MAX_BODY_BYTES) if path == "/mcp" or path.startswith("/mcp/") else CHUNKED_MAX_BYTES


def _buffer_chunked(environ: dict[str, Any]) -> CountingInput:
    """Gives a chunked body a length. Django reads CONTENT_LENGTH bytes of a request and nothing without it, so a
    client streaming its body (Node's fetch with a stream, httpx with a generator) was answered as if it had sent
    none. The servers hand over the body already de-chunked; it is read up to its cap + 1, which the view refuses
    in its own format."""
    cap, stream, parts, size = _chunked_cap(environ), environ["wsgi.input"], [], 0
    while size <= cap:
        data = stream.read(min(_CHUNK, cap + 1 - size))
        if not data:
            break
        parts.append(data)
        size += len(data)
    environ["CONTENT_LENGTH"] = str(size)
    whole = CountingInput(io.BytesIO(b"".join(parts)))
    whole.at_end = size <= cap  # the server's stream is read to its end, or left for _settle
    return whole


def body_guard(app: WsgiApp) -> WsgiApp:
    """Wraps a WSGI application so an unread request body never reaches the next request, and a chunked body
    reaches it with a length."""

    def guarded(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if _is_chunked(environ) and not environ.get("CONTENT_LENGTH"):
            body = _buffer_chunked(environ)
        else:
            body = CountingInput(environ["wsgi.input"])
        environ["wsgi.input"] = body

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            _settle(environ, body, start_response)
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        return app(environ, start)

    return guarded
