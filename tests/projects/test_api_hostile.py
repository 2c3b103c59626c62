"""Hostile input on /api/v1: raw requests to every documented operation (brain/bench/fuzz_cases.py, the
generators `brain bench fuzz` runs at length) with bodies generated from each operation's schema (valid, one
member hostile, or anything: NUL, lone surrogates, huge and deeply nested values, NaN), hostile path ids and
query strings, and bad Authorization, Content-Type and other headers; then schemathesis's negative mode over
the OpenAPI document. Never a 5xx, every error in the one envelope, the second tenant untouched and unseen."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from brain.bench.fuzz_cases import HttpCase, rest_case, rest_operations
from brain.bench.fuzz_check import leaked, rest_problem
from brain.wsgi import application
from tests.conftest import Tenant
from tests.support.fuzz import fingerprint, marker, seed, send

pytestmark = pytest.mark.django_db
EXAMPLES = 700
NEGATIVE_EXAMPLES = 200
LABELS: Counter[str] = Counter()
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def world(tenant_a: Tenant, tenant_b: Tenant, client: Client) -> Iterator[dict[str, Any]]:
    own_ids, _ = seed(tenant_a, marker())
    other_ids, secrets = seed(tenant_b, marker())
    openapi = client.get("/api/v1/openapi.json").json()
    before = fingerprint(tenant_b.user)
    yield {"openapi": openapi, "token": tenant_a.user_raw, "ids": own_ids + other_ids + [str(tenant_b.user_token.id)],
           "secrets": secrets + other_ids, "client": client, "user": tenant_a.user_raw}
    assert fingerprint(tenant_b.user) == before, "the fuzzing tenant changed the other tenant's rows"


def _check(world: dict[str, Any], case: HttpCase) -> None:
    status, content_type, body = send(world["client"], case)
    LABELS[case.label] += 1
    problem = rest_problem(case.method, status, content_type, body)
    assert problem is None, (problem, case, body[:500])
    secret = leaked(body, world["secrets"], case.body + case.path.encode())
    assert secret is None, (secret, case, body[:500])


def test_hostile_requests_get_the_error_envelope(world: dict[str, Any]) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
              database=None)
    @given(case=rest_case(world["openapi"], world["token"], world["ids"]))
    def run(case: HttpCase) -> None:
        _check(world, case)

    run()
    print(f"\nhostile /api/v1: {sum(LABELS.values())} cases: {dict(LABELS.most_common())}")
    operations = {f"{op.method} {op.path}" for op in rest_operations(world["openapi"])}
    assert set(LABELS) == operations, f"never sent: {operations - set(LABELS)}"


@pytest.fixture
def negative(world: dict[str, Any]) -> Iterator[dict[str, Any]]:
    # As Django's test client does: keep the test transaction's connection open across requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield world
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_schemathesis_negative_cases_get_the_error_envelope(negative: dict[str, Any]) -> None:
    operations: Counter[str] = Counter()

    @settings(max_examples=NEGATIVE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True, database=None)
    @given(case=schema.as_strategy(GenerationMode.NEGATIVE))
    def run(case: Any) -> None:
        operations[case.operation.label] += 1
        response = case.call(headers={"Authorization": f"Bearer {negative['user']}"})
        problem = rest_problem(case.method, response.status_code, response.headers.get("content-type", [""])[0],
                               response.content)
        assert problem is None, (problem, case.as_curl_command(), response.content[:500])
        assert leaked(response.content, negative["secrets"], repr(case).encode()) is None

    run()
    print(f"\nschemathesis negative: {sum(operations.values())} cases: {dict(operations.most_common())}")
    assert len(operations) >= len(list(schema.get_all_operations())) - 2  # nearly every operation got cases


MALFORMED = [b"--x\r\n" + b"A" * 9000, b"--x\r\nContent-Disposition: form-data\r\n\r\n", b"garbage"]


@pytest.mark.parametrize("body", MALFORMED)
def test_a_malformed_multipart_import_is_a_validation_error(tenant_a: Tenant, tenant_b: Tenant, client: Client,
                                                            body: bytes) -> None:
    """Found by the fuzz: part headers over Django's limit raised MultiPartParserError, answered 500."""
    before = fingerprint(tenant_b.user)
    response = client.post("/api/v1/import", data=body, content_type="multipart/form-data; boundary=x",
                           headers={"Authorization": f"Bearer {tenant_a.user_raw}"})
    assert rest_problem("POST", response.status_code, response["Content-Type"], response.content) is None
    assert response.status_code == 400 and response.json()["error"]["code"] == "VALIDATION", response.content
    assert fingerprint(tenant_b.user) == before


@pytest.mark.parametrize("name", ["Émile", "ÆRØ Tools", "İstanbul", "ΣΟΦΙΑ", "Straße"])
def test_creating_a_project_twice_with_a_non_ascii_name_returns_the_first(tenant_a: Tenant, tenant_b: Tenant,
                                                                         client: Client, name: str) -> None:
    """Found by the fuzz: the lookup lowered the name in Python, the unique constraint in PostgreSQL; where they
    disagree the second create missed the first project, hit the constraint and answered 500."""
    auth = {"Authorization": f"Bearer {tenant_a.user_raw}"}
    before = fingerprint(tenant_b.user)
    first = client.post("/api/v1/projects", {"name": name}, content_type="application/json", headers=auth)
    again = client.post("/api/v1/projects", {"name": name}, content_type="application/json", headers=auth)
    assert first.status_code in (200, 201) and again.status_code in (200, 201), again.content
    assert again.json()["id"] == first.json()["id"]
    assert fingerprint(tenant_b.user) == before


@pytest.mark.parametrize("path", ["/api/v1/knowledge%0Ax", "/api/v1/%0A%0A", "/api/v1/projects%0D%0Ax"])
def test_a_path_with_a_newline_gets_the_json_404(tenant_a: Tenant, client: Client, path: str) -> None:
    """Found by the fuzz: the catch-all's `.*` stopped at a newline, so Django answered its HTML 404."""
    response = client.get(path, headers={"Authorization": f"Bearer {tenant_a.user_raw}"})
    assert rest_problem("GET", response.status_code, response["Content-Type"], response.content) is None
    assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
