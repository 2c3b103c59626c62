"""Request rate limits on /mcp, /mcp/cognibrain and /api/v1, counted in the machine's real Redis (database 13,
a key prefix per test so parallel runs never share counters)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid
from typing import Any

import pytest
import redis
from django.test import Client

from brain.addresses import client_address
from knowledge.models import KnowledgeItem
from mcpgw import protocol as p
from tests.conftest import Tenant
from tests.mcpgw.conftest import Mcp, ops
from tests.support.api import api_error, bearer

REDIS_URL = "redis://127.0.0.1:6379/13"
INIT = ('{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')


# A day's window: the windows are fixed to the clock, and a test that crossed a window's end (a replica process takes
# seconds to start) found its counts reset.
WINDOW = 86_400


@pytest.fixture
def limited(settings: Any) -> Any:
    """Tiny limits in a private key space; the keys are deleted afterwards."""
    prefix = f"test:rl:{uuid.uuid4().hex}:"
    settings.RATE_LIMIT_REDIS_URL, settings.RATE_LIMIT_KEY_PREFIX = REDIS_URL, prefix
    settings.BRAIN_RATE_LIMITS = {"window_s": WINDOW, "per_token": 3, "per_address": 100}
    yield settings
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(f"{prefix}*"):
        client.delete(key)


def discover(mcp: Mcp) -> Any:
    return mcp.modern("server/discover")


@pytest.mark.django_db
def test_mcp_token_over_its_rate_gets_a_json_rpc_429_with_a_retry_hint(limited: Any, mcp_a: Mcp, mcp_b: Mcp) -> None:
    assert [discover(mcp_a).status_code for _ in range(3)] == [200, 200, 200]
    response = discover(mcp_a)
    assert response.status_code == 429
    retry = int(response["Retry-After"])
    assert 1 <= retry <= WINDOW
    body = response.json()
    assert body["id"] == mcp_a.ids  # the refusal names the request it refuses
    error = body["error"]
    assert error["code"] == p.RATE_LIMITED and "Retry in" in error["message"]
    assert error["data"] == {"retryable": True, "retryAfterSeconds": retry, "scope": "token", "limit": 3,
                             "windowSeconds": WINDOW}
    # The other tenant's token, from the same address, has its own counter.
    assert discover(mcp_b).status_code == 200


@pytest.mark.django_db
def test_the_cognibrain_profile_and_rest_share_the_token_counter(limited: Any, tenant_a: Tenant) -> None:
    mcp = Mcp(Client(), tenant_a.user_raw)
    assert discover(mcp).status_code == 200
    cognibrain = mcp.client.post("/mcp/cognibrain", data=INIT % 7,
                                 content_type="application/json", headers=mcp.headers())
    assert cognibrain.status_code == 200
    assert bearer(tenant_a.user_raw).get("/api/v1/projects").status_code == 200
    refused = mcp.client.post("/mcp/cognibrain", data=INIT % 8,
                              content_type="application/json", headers=mcp.headers())
    assert refused.status_code == 429 and refused.json()["error"]["code"] == p.RATE_LIMITED


@pytest.mark.django_db
def test_rest_over_its_rate_answers_the_envelope_and_changes_nothing(limited: Any, tenant_a: Tenant,
                                                                    tenant_b: Tenant) -> None:
    api = bearer(tenant_a.user_raw)
    before = KnowledgeItem.objects.count()
    for _ in range(3):
        assert api.get("/api/v1/projects").status_code == 200
    teach = {"rule": "Always pin versions", "projectId": str(tenant_a.project.id)}
    response = api.post("/api/v1/knowledge", data=teach, content_type="application/json")
    error = api_error(response, 429, "RATE_LIMITED")
    assert error["details"]["scope"] == "token" and error["details"]["retryable"] is True
    assert response["Retry-After"] == str(error["details"]["retryAfterSeconds"])
    assert KnowledgeItem.objects.count() == before  # refused before the write
    # Tenant B is not limited by A's traffic and still sees only its own project.
    mine = bearer(tenant_b.user_raw).get("/api/v1/projects")
    assert mine.status_code == 200 and [row["id"] for row in mine.json()["items"]] == [str(tenant_b.project.id)]


REPLICA = """
import sys, django
django.setup()
from django.conf import settings
settings.RATE_LIMIT_REDIS_URL, settings.RATE_LIMIT_KEY_PREFIX = sys.argv[1], sys.argv[2]
settings.BRAIN_RATE_LIMITS = {"window_s": %d, "per_token": 3, "per_address": 100}
from brain.ratelimit import rate_limit_hit
print(rate_limit_hit(credential=sys.argv[3], address="10.7.7.7") is None)
"""


@pytest.mark.django_db
def test_another_process_counts_into_the_same_window(limited: Any, mcp_a: Mcp) -> None:
    """A second web replica is another process: its requests use up the same token's limit."""
    assert [discover(mcp_a).status_code for _ in range(2)] == [200, 200]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "brain.settings"}
    argv = [sys.executable, "-c", REPLICA % WINDOW, REDIS_URL, limited.RATE_LIMIT_KEY_PREFIX, str(mcp_a.raw)]
    replica = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=True)
    assert replica.stdout.strip().splitlines()[-1] == "True"  # the third request of the window, from the replica
    assert discover(mcp_a).status_code == 429


@pytest.mark.django_db
def test_the_address_limit_covers_every_token_behind_it(limited: Any, tenant_a: Tenant, tenant_b: Tenant) -> None:
    limited.BRAIN_RATE_LIMITS = {"window_s": WINDOW, "per_token": 100, "per_address": 2}
    one, two = Client(REMOTE_ADDR="10.1.1.1"), Client(REMOTE_ADDR="10.1.1.1")
    assert discover(Mcp(one, tenant_a.user_raw)).status_code == 200
    assert discover(Mcp(two, tenant_b.user_raw)).status_code == 200
    # Without a token too: a flood of unauthenticated requests is still counted against its address.
    refused = Mcp(two, None).modern("server/discover")
    assert refused.status_code == 429 and refused.json()["error"]["data"]["scope"] == "address"
    rest = Client(REMOTE_ADDR="10.1.1.1", HTTP_AUTHORIZATION=f"Bearer {tenant_b.user_raw}").get("/api/v1/projects")
    assert api_error(rest, 429, "RATE_LIMITED")["details"]["scope"] == "address"
    assert discover(Mcp(Client(REMOTE_ADDR="10.1.1.2"), tenant_a.user_raw)).status_code == 200


@pytest.mark.django_db
def test_unreachable_redis_lets_requests_and_writes_through_and_says_so(
        settings: Any, tenant_a: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    # Port 1 refuses connections; the db number makes this URL's failure state this test's own.
    settings.RATE_LIMIT_REDIS_URL = f"redis://127.0.0.1:1/{uuid.uuid4().int % 15}"
    settings.BRAIN_RATE_LIMITS = {"window_s": WINDOW, "per_token": 1, "per_address": 1}
    caplog.set_level(logging.WARNING, logger="brain.ratelimit")
    api = bearer(tenant_a.user_raw)
    for n in range(3):
        response = api.post("/api/v1/knowledge", data={"rule": f"Always run the linter before commit {n}",
                                                         "projectId": str(tenant_a.project.id)},
                            content_type="application/json")
        assert response.status_code == 201, response.content
    assert discover(Mcp(Client(), tenant_a.user_raw)).status_code == 200
    logged = ops(caplog, "ratelimit.unavailable")
    assert len(logged) == 1 and logged[0]["error"] == "ConnectionError"


@pytest.mark.django_db
def test_a_zero_limit_is_off(limited: Any, mcp_a: Mcp) -> None:
    limited.BRAIN_RATE_LIMITS = {"window_s": WINDOW, "per_token": 0, "per_address": 0}
    assert {discover(mcp_a).status_code for _ in range(6)} == {200}


def test_client_address_trusts_only_the_configured_proxy_hops(settings: Any) -> None:
    from django.test import RequestFactory

    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    settings.TRUSTED_PROXY_HOPS = 0
    assert client_address(request) == "10.0.0.5"  # the header is the client's own claim
    settings.TRUSTED_PROXY_HOPS = 1
    assert client_address(request) == "203.0.113.9"  # the entry our proxy appended
    settings.TRUSTED_PROXY_HOPS = 3
    assert client_address(request) == "10.0.0.5"  # fewer entries than proxies: the header is not ours
