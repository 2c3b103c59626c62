"""`brain mcp stdio`: a stdio MCP server that forwards every message to a brain's /mcp over HTTP.

For clients configured with `{"command": "brain", "args": ["mcp", "stdio"], "env": {...}}`. One JSON-RPC
message per stdin line; each answer is one stdout line; logs go to stderr. No database, no Django:
only BRAIN_URL and BRAIN_MCP_TOKEN.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, Any

import httpx

from mcpgw import protocol as p

HELP = "bridge a stdio MCP client to the brain's HTTP endpoint (BRAIN_URL, BRAIN_MCP_TOKEN)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=None, help="brain URL (default $BRAIN_URL, e.g. http://127.0.0.1:8000)")
    parser.add_argument("--profile", choices=PROFILES, default="brain",
                        help="tool set: brain (the brain_* tools at /mcp) or cognibrain (/mcp/cognibrain)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one answer")


def _log(message: str) -> None:
    print(f"brain mcp stdio: {message}", file=sys.stderr, flush=True)


PROFILES = ("brain", "cognibrain")


def endpoint(url: str, profile: str = "brain") -> str:
    url = url.rstrip("/")
    base = url if url.endswith("/mcp") else f"{url}/mcp"
    return base if profile == "brain" else f"{base}/{profile}"


class Bridge:
    """Carries the session id and protocol version between messages, like an HTTP MCP client would."""

    def __init__(self, url: str, token: str, http: httpx.Client) -> None:
        self.url, self.token, self.http = url, token, http
        self.session_id: str | None = None
        self.version: str | None = None

    def headers(self, message: dict[str, Any]) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        raw_meta = params.get("_meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if isinstance(meta.get(p.PROTOCOL_VERSION_META_KEY), str):  # stateless era: mirror the body in headers
            headers[p.VERSION_HEADER] = meta[p.PROTOCOL_VERSION_META_KEY]
            headers[p.METHOD_HEADER] = str(message.get("method"))
            name_key = p.NAME_BEARING.get(str(message.get("method")))
            if name_key and isinstance(params.get(name_key), str) and params[name_key].isascii():
                headers[p.NAME_HEADER] = params[name_key]
        else:
            if self.session_id:
                headers[p.SESSION_HEADER] = self.session_id
            if self.version:
                headers[p.VERSION_HEADER] = self.version
        return headers

    def forward(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to write back, or None (notifications)."""
        response = self.http.post(self.url, json=message, headers=self.headers(message))
        if response.status_code == 202 or not response.content:
            return None
        if p.SESSION_HEADER in response.headers:
            self.session_id = response.headers[p.SESSION_HEADER]
        try:
            answer = response.json()
        except ValueError:
            raise httpx.HTTPError(f"HTTP {response.status_code} with a non-JSON body") from None
        if message.get("method") == "initialize" and isinstance(answer.get("result"), dict):
            self.version = answer["result"].get("protocolVersion")
        if "id" in message and answer.get("id") is None:
            answer["id"] = message["id"]  # transport errors (401, 404) cannot know the id; the client needs it
        return answer

    def close(self) -> None:
        if self.session_id:
            try:
                self.http.delete(self.url, headers={"Authorization": f"Bearer {self.token}",
                                                    p.SESSION_HEADER: self.session_id})
            except httpx.HTTPError as exc:
                _log(f"could not close the session: {exc}")


def _error(request_id: Any, message: str, code: int = p.INTERNAL_ERROR) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def serve(bridge: Bridge, stdin: IO[str], stdout: IO[str]) -> None:
    for line in stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            answer: dict[str, Any] | None = _error(None, "Parse error: one JSON-RPC message per line", p.PARSE_ERROR)
        else:
            try:
                answer = bridge.forward(message) if isinstance(message, dict) else _error(
                    None, "one JSON-RPC object per line", p.INVALID_REQUEST)
            except httpx.HTTPError as exc:
                _log(f"{bridge.url}: {exc}")
                is_request = isinstance(message, dict) and "id" in message
                answer = _error(message.get("id"), f"brain unreachable at {bridge.url}: {exc}") if is_request else None
        if answer is not None:
            stdout.write(json.dumps(answer) + "\n")
            stdout.flush()


def run(args: argparse.Namespace) -> int:
    url = args.url or os.environ.get("BRAIN_URL", "")
    token = os.environ.get("BRAIN_MCP_TOKEN", "")
    if not url or not token:
        _log("set BRAIN_URL (e.g. http://127.0.0.1:8000) and BRAIN_MCP_TOKEN (from `brain token create`)")
        return 2
    with httpx.Client(timeout=args.timeout) as http:
        bridge = Bridge(endpoint(url, getattr(args, "profile", "brain")), token, http)
        _log(f"forwarding stdio to {bridge.url}")
        try:
            serve(bridge, sys.stdin, sys.stdout)
        finally:
            bridge.close()
    _log("stdin closed; bye")
    return 0
