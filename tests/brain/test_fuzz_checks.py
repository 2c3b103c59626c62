"""The fuzz suites' oracles must see a violation: HTML, a 5xx, NaN, a missing envelope, a leaked secret."""

from __future__ import annotations

import json

from brain.bench.fuzz_check import Tally, http_server_refusal, leaked, mcp_problem, rest_problem
from brain.bench.fuzz_values import Raw, dump

ENVELOPE = json.dumps({"error": {"code": "VALIDATION", "message": "bad", "details": {}}}).encode()
RPC_ERROR = json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}).encode()


def test_mcp_answers_must_be_json_rpc() -> None:
    assert mcp_problem("POST", 400, "application/json", RPC_ERROR) is None
    assert mcp_problem("POST", 202, "", b"") is None
    assert mcp_problem("POST", 500, "application/json", RPC_ERROR) == "HTTP 500"
    assert mcp_problem("POST", 400, "text/html", b"<h1>Bad</h1>") is not None
    assert mcp_problem("POST", 200, "application/json", b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN}}') is not None
    assert mcp_problem("POST", 200, "application/json", b'{"jsonrpc":"2.0","id":1}') is not None
    assert mcp_problem("POST", 200, "application/json", b'{"id":1,"result":{}}') is not None
    assert mcp_problem("POST", 400, "application/json", b'{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}') is not None


def test_rest_errors_must_be_the_envelope() -> None:
    assert rest_problem("GET", 404, "application/json", ENVELOPE) is None
    assert rest_problem("GET", 200, "application/json", b'{"items":[]}') is None
    assert rest_problem("GET", 500, "application/json", ENVELOPE) == "HTTP 500"
    assert rest_problem("GET", 400, "application/json", b'{"detail":"bad"}') is not None
    assert rest_problem("GET", 404, "text/html", b"<h1>Not Found</h1>") is not None
    assert rest_problem("GET", 200, "application/json", b'{"confidence":Infinity}') is not None
    assert rest_problem("GET", 301, "text/html", b"") is None  # `/api/v1` -> `/api/v1/`
    assert rest_problem("GET", 302, "text/html", b"<a href=x>moved</a>") is not None


def test_leaks_count_only_what_the_request_did_not_carry() -> None:
    assert leaked(b'{"rule":"the zq-secret-1 checklist"}', ["zq-secret-1"], b"{}") == "zq-secret-1"
    assert leaked(b'{"error":"session abc not found"}', ["abc"], b'{"sessionId":"abc"}') is None


def test_tally_counts_failures_and_keeps_gunicorn_refusals_apart() -> None:
    tally = Tally()
    tally.add(200, None, 0.01, "ok", None)
    tally.add(500, "HTTP 500", 0.01, "boom", None)
    tally.add(None, "ReadError", 0.01, "gone", None)
    tally.add(431, None, 0.01, "huge header", None, refused=http_server_refusal(431, "text/html"))
    summary = tally.summary()
    assert (summary["cases"], summary["5xx"], summary["dropped"], summary["refusedByHttpServer"]) == (4, 1, 1, 1)
    assert tally.failures == 2 and len(summary["examples"]) == 2


def test_dump_escapes_surrogates_and_inserts_raw_text() -> None:
    text = dump({"a": "\ud800\x00", "n": Raw("NaN"), "deep": Raw("[[]]")})
    assert text == '{"a":"\\ud800\\u0000","n":NaN,"deep":[[]]}' and text.isascii()
