"""Hostile input on /api/v1: raw requests to every documented operation (brain/bench/fuzz_cases.py, the
generators `brain bench fuzz` runs at length) with bodies generated from each operation's schema (valid, one
member hostile, or anything: NUL, lone surrogates, huge and deeply nested values, NaN), hostile path ids and
query strings, and bad Authorization, Content-Type and other headers; then schemathesis's negative mode over
the OpenAPI document. Never a 5xx, every error in the one envelope, the second tenant untouched and unseen."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from brain.bench.fuzz_cases import HttpCase, rest_case, rest_operations
from brain.bench.fuzz_check import leaked, rest_problem
from brain.wsgi import application
from tests.conftest import Tenant
from tests.support.fuzz import fingerprint, marker, seed, send

pytestmark = pytest.mark.django_db
EXAMPLES = 700
NEGATIVE_PER_OPERATION = 8
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


def _negative_cases(operation: Any, world: dict[str, Any], operations: Counter[str]) -> None:
    @settings(max_examples=NEGATIVE_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True, database=None)
    @given(case=operation.as_strategy(GenerationMode.NEGATIVE))
    def run(case: Any) -> None:
        operations[case.operation.label] += 1
        response = case.call(headers={"Authorization": f"Bearer {world['user']}"})
        problem = rest_problem(case.method, response.status_code, response.headers.get("content-type", [""])[0],
                               response.content)
        assert problem is None, (problem, case.as_curl_command(), response.content[:500])
        assert leaked(response.content, world["secrets"], repr(case).encode()) is None

    with suppress(Unsatisfiable):  # nothing in the operation can be made invalid (e.g. no parameters, no body)
        run()


def test_schemathesis_negative_cases_get_the_error_envelope(negative: dict[str, Any]) -> None:
    # Operation by operation, so every operation gets its cases whatever order the generator would pick.
    operations: Counter[str] = Counter()
    every = [result.ok() for result in schema.get_all_operations()]
    for operation in every:
        _negative_cases(operation, negative, operations)
    print(f"\nschemathesis negative: {sum(operations.values())} cases: {dict(operations.most_common())}")
    assert len(operations) >= len(every) - 2  # nearly every operation got cases
