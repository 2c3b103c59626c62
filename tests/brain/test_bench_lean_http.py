"""The bench's lean HTTP/1.1 client against a local server: bodies by length and by chunks, kept-alive
connections, a connection the server closed, and a write that is never sent twice."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from brain.bench.lean_http import LeanConnection


class _Server:
    """Answers each POST with its JSON body echoed; `close_after` requests per connection, then hangs up."""

    def __init__(self, *, chunked: bool = False, close_after: int = 0, silent_close: bool = False) -> None:
        self.chunked, self.close_after, self.silent_close = chunked, close_after, silent_close
        self.connections = 0
        self.requests: list[dict[str, Any]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            body = json.loads(await reader.readexactly(length))
            self.requests.append({"head": head.decode(), "body": body})
            served += 1
            last = bool(self.close_after) and served >= self.close_after
            if last and self.silent_close:  # the request was read, the connection dropped without an answer
                break
            payload = json.dumps({"echo": body}).encode()
            if self.chunked:
                framed = b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
                    b"%x\r\n%s\r\n" % (len(part), part) for part in (payload[:5], payload[5:])) + b"0\r\n\r\n"
            else:
                framed = b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
            closing = b"Connection: close\r\n" if last else b""
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + closing + framed)
            await writer.drain()
            if last:
                break
        writer.close()


async def _run(server: _Server, calls: list[tuple[dict[str, Any], bool]]) -> list[Any]:
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    connection = LeanConnection(f"http://127.0.0.1:{port}/mcp", {"Authorization": "Bearer t", "X-Session": "s1"})
    answers: list[Any] = []
    try:
        for body, resend in calls:
            try:
                answers.append((await connection.post(body, resend=resend)).json())
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                answers.append(type(exc).__name__)
    finally:
        await connection.close()
        listening.close()
        await listening.wait_closed()
    return answers


def test_kept_alive_bodies_by_length_and_by_chunks() -> None:
    for chunked in (False, True):
        server = _Server(chunked=chunked)
        answers = asyncio.run(_run(server, [({"n": 1}, True), ({"n": 2, "text": "é"}, True)]))
        assert answers == [{"echo": {"n": 1}}, {"echo": {"n": 2, "text": "é"}}]
        assert server.connections == 1
        head = server.requests[0]["head"]
        assert head.startswith("POST /mcp HTTP/1.1\r\n") and "Authorization: Bearer t" in head
        assert "X-Session: s1" in head and "Content-Type: application/json" in head


def test_a_connection_the_server_closed_is_reopened() -> None:
    server = _Server(close_after=1)
    answers = asyncio.run(_run(server, [({"n": 1}, True), ({"n": 2}, True), ({"n": 3}, True)]))
    assert answers == [{"echo": {"n": 1}}, {"echo": {"n": 2}}, {"echo": {"n": 3}}]
    assert server.connections == 3


@pytest.mark.parametrize(("resend", "sent"), [(True, 3), (False, 2)])
def test_a_lost_answer_is_asked_again_only_for_reads(resend: bool, sent: int) -> None:
    # The second request is read by the server and its connection dropped without an answer.
    server = _Server(close_after=2, silent_close=True)
    answers = asyncio.run(_run(server, [({"n": 1}, True), ({"n": 2}, resend)]))
    assert answers[0] == {"echo": {"n": 1}}
    assert len(server.requests) == sent  # a write is never sent twice
    if resend:
        assert answers[1] == {"echo": {"n": 2}} and server.connections == 2
    else:
        assert answers[1] == "IncompleteReadError"
