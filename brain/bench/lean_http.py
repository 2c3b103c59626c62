"""The timed requests of `brain bench mcp`: one keep-alive HTTP/1.1 connection per client over asyncio streams.

The load generator runs on the machine it measures. With httpx's async client it spent about 1.4 ms of CPU per
request (35 % of a core at 244 requests/s on two cores), CPU the server under test then lacked; this client
writes each request with pre-encoded headers and reads the answer by its Content-Length (or its chunks), about
a tenth of that. Both servers of `--reference` are measured with it, so the ratios stay like for like. httpx
still does what is not timed (the handshake, the REST read-back).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

RESENT_ERRORS = (ConnectionError, asyncio.IncompleteReadError)


@dataclass
class Answer:
    status_code: int  # httpx's name, so a check reads either
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class LeanConnection:
    """POSTs JSON to one URL over a kept-alive connection, reconnecting when the server closed it."""

    url: str
    headers: dict[str, str]
    _reader: asyncio.StreamReader | None = field(default=None, repr=False)
    _writer: asyncio.StreamWriter | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        self._host, self._port, self._path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"
        lines = [f"POST {self._path} HTTP/1.1", f"Host: {parts.netloc}", "Content-Type: application/json",
                 *(f"{name}: {value}" for name, value in self.headers.items())]
        self._head = ("\r\n".join(lines) + "\r\n").encode("latin-1")

    async def post(self, body: dict[str, Any], *, resend: bool = True) -> Answer:
        """The answer to one POST. A connection the server had closed is reopened and, with `resend` (reads
        only), the request sent again on it; a write is never sent twice."""
        payload = json.dumps(body, separators=(",", ":")).encode()
        request = self._head + b"Content-Length: %d\r\n\r\n" % len(payload) + payload
        try:
            return await self._exchange(request)
        except RESENT_ERRORS:
            await self.close()
            if not resend:
                raise
            return await self._exchange(request)

    async def _exchange(self, request: bytes) -> Answer:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        assert self._reader is not None
        self._writer.write(request)
        await self._writer.drain()
        answer = await read_answer(self._reader)
        if answer.headers.get("connection", "").lower() == "close":
            await self.close()
        return answer

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()
        self._reader = self._writer = None


async def read_answer(reader: asyncio.StreamReader) -> Answer:
    """One HTTP/1.1 response: status line, headers, then a Content-Length or chunked body."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _chunks(reader)
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Answer(int(status_line.split()[1]), headers, body)


async def _chunks(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # the empty trailer
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
