"""Property-based run of schemathesis against /api/v1/openapi.json, in-process through WSGI.

Every generated request (valid and invalid) must get an answer that is not a server error and that
matches the documented response schemas. Examples per operation are capped to keep CI short.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from brain.wsgi import application
from knowledge.services.teach import knowledge_teach
from projects.scope import Principal
from projects.services.accounts import project_ensure_named, token_create
from projects.services.orgs import invitation_accept, invitation_create, org_create, org_review_set
from tests.factories import UserFactory, make_tenant
from tests.support.closed_session import closed_session

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)
CASES: list[str] = []
SUCCEEDED: set[str] = set()
MAX_EXAMPLES = 10


@pytest.fixture(scope="module", autouse=True)
def _cases_ran() -> Iterator[None]:
    """The run is only evidence if it generated requests for every operation."""
    yield
    per_operation = {label: CASES.count(label) for label in set(CASES)}
    print(f"\nschemathesis: {len(CASES)} cases over {len(per_operation)} operations: {per_operation}")
    assert len(per_operation) == len(list(schema.get_all_operations())) and min(per_operation.values()) >= 5
    assert set(per_operation) == SUCCEEDED, f"never reached a 2xx: {set(per_operation) - SUCCEEDED}"


def _seed(tenant: dict[str, Any]) -> dict[str, str]:
    """Real rows of the fuzzing tenant, so that id-taking operations also reach their success paths."""
    principal = Principal(user=tenant["user"], token=tenant["user_token"])
    rule = knowledge_teach(principal=principal, rule="Run the linter before committing", type="reflex").item
    item = knowledge_teach(principal=principal, rule="Write the changelog", type="action_item",
                           tags=["action-item", "for:fuzz@f.example"]).item
    session = closed_session(user=tenant["user"], project=tenant["project"], events=[("note", "fuzz me", {})])
    spare, _ = token_create(user=tenant["user"], label="spare")  # revocable without locking the fuzzer out
    return {"knowledge_id": str(rule.id), "item_id": str(item.id), "session_id": str(session.id),
            "project_id": str(tenant["project"].id), "token_id": str(spare.id)}


def _team(tenant: dict[str, Any]) -> tuple[str, Callable[[], str]]:
    """A team org the fuzzing tenant owns, with review of members' rules on, and a maker of a member's pending
    rule (approve and reject each use one up)."""
    org = org_create(user=tenant["user"], name="Fuzz Team")
    member = UserFactory(email="member@f.example")
    invitation_accept(user=member, raw=invitation_create(user=tenant["user"], org=org, email=member.email)[1])
    project, _ = project_ensure_named(user=tenant["user"], name="Fuzz Shared", org=org)
    org_review_set(user=tenant["user"], org=org, required=True)
    by_member = Principal(user=member)

    def pending() -> str:
        return str(knowledge_teach(principal=by_member, rule=f"member rule {len(CASES)}",
                                   project_id=str(project.id)).item.id)

    return org.slug, pending


@pytest.fixture
def bearer(db: None) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
    tenant = make_tenant("fuzz@f.example", "Fuzz App")
    _seed(make_tenant("other@o.example", "Other App"))  # the second tenant, whose rows must never leak
    seeded: dict[str, Any] = dict(_seed(tenant))
    seeded["slug"], seeded["pending"] = _team(tenant)
    # As Django's test client does: keep the test transaction's connection open across requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield {"Authorization": f"Bearer {tenant['user_raw']}"}, seeded
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_has_no_server_errors(case: Any, bearer: tuple[dict[str, str], dict[str, Any]]) -> None:
    headers, seeded = bearer
    CASES.append(case.operation.label)
    if len(CASES) % 2 and case.path_parameters:  # every other case aims at a real row instead of a random id
        case.path_parameters.update({k: seeded[k] for k in case.path_parameters if k in seeded})
        if case.operation.label.endswith(("/approve", "/reject")):  # a member's rule waiting for the fuzzer
            case.path_parameters["knowledge_id"] = seeded["pending"]()
    response = case.call_and_validate(
        headers=headers, checks=[not_a_server_error, response_schema_conformance, status_code_conformance]
    )
    if response.status_code < 300:
        SUCCEEDED.add(case.operation.label)
