"""The storable-text rule lives in the core (`brain.text`): the REST API refuses NUL and lone surrogates in
every body it writes from, and the services refuse them for any other caller (dashboard, CLI, jobs), with
VALIDATION naming the field and nothing stored. The second tenant's rows never change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from brain.errors import ValidationFailed
from brain.text import text_storable
from knowledge.models import KnowledgeItem, PeerCard
from knowledge.selectors.live import peer_card_of
from knowledge.services.curate import knowledge_edit, knowledge_supersede
from knowledge.services.peer import peer_card_set
from knowledge.services.teach import knowledge_teach
from projects.models import ApiToken, AuditEvent, Org, Project
from projects.services.accounts import project_ensure_named, token_create
from projects.services.orgs import org_create
from sessions.models import Session, SessionEvent
from sessions.services.open import session_open
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db
JSON = "application/json"
NUL, SURROGATE = "\x00", "\ud800"


def _rows() -> tuple[int, ...]:
    models = (KnowledgeItem, PeerCard, Project, Org, ApiToken, AuditEvent, Session, SessionEvent)
    return tuple(model.objects.count() for model in models)


def test_the_rule_walks_nested_values_and_names_the_path() -> None:
    text_storable(a="plain", b=["é", {"k": "ü"}], c=None, d=3, e={"n": 1.5})  # storable: no error
    cases = {
        "rule": ({"rule": f"x{NUL}y"}, "NUL"),
        "payload.a.b[1]": ({"payload": {"a": {"b": ["ok", f"{SURROGATE}"]}}}, "surrogate"),
        "a key of facts": ({"facts": {f"e{NUL}": "vim"}}, "NUL"),
        "tags[0]": ({"tags": (f"{SURROGATE}",)}, "surrogate"),
        "payload.x": ({"payload": {"x": float("nan")}}, "finite"),
        "payload.y[1]": ({"payload": {"y": [1.0, float("inf")]}}, "finite"),
    }
    for where, (fields, problem) in cases.items():
        with pytest.raises(ValidationFailed) as caught:
            text_storable(**fields)
        assert caught.value.message.startswith(f"{where} must ") and problem in caught.value.message
        assert caught.value.details == {"field": where}


# A surrogate never reaches a `str` field of a REST body (pydantic refuses it first), so the REST cases
# send one only where the body holds free-form JSON (peer card values); NUL goes everywhere.
REST_WRITES: list[tuple[str, str, Any, str]] = [
    ("post", "/api/v1/knowledge", {"rule": f"tabs {NUL} always"}, "rule"),
    ("post", "/api/v1/knowledge", {"rule": "tabs always", "tags": ["style", f"t{NUL}"]}, "tags"),
    ("post", "/api/v1/knowledge", {"rule": "tabs always", "trigger": f"when {NUL}"}, "trigger"),
    ("patch", "/api/v1/knowledge/{id}", {"rationale": f"because {NUL}"}, "rationale"),
    ("post", "/api/v1/knowledge/{id}/supersede", {"rule": f"spaces {NUL} now"}, "rule"),
    ("put", "/api/v1/peer-card", {"facts": {"editor": f"vi{NUL}m"}}, "facts"),
    ("put", "/api/v1/peer-card", '{"facts": {"editor": "vi\\ud800m"}}', "facts"),
    ("post", "/api/v1/projects", {"name": f"Acme {NUL}"}, "name"),
    ("post", "/api/v1/projects", {"name": "Acme", "framework": f"re{NUL}act"}, "framework"),
    ("post", "/api/v1/tokens", {"label": f"lap{NUL}top"}, "label"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), REST_WRITES,
                         ids=[f"{m}:{p}:{f}" for m, p, _, f in REST_WRITES])
def test_rest_writes_refuse_unstorable_text(tenant_a: Tenant, tenant_b: Tenant, method: str, path: str, body: Any,
                                            field: str) -> None:
    row = knowledge_teach(principal=tenant_a.principal, rule="Indent with tabs").item
    peer_card_set(user=tenant_b.user, facts={"editor": "emacs"})
    before = _rows()
    call: Callable[..., Any] = getattr(bearer(tenant_a.user_raw), method)
    error = api_error(call(path.format(id=row.id), body, content_type=JSON), 400, "VALIDATION")
    assert [f["field"] for f in error["details"]["fields"]] == [field]
    assert _rows() == before
    row.refresh_from_db()
    assert (row.content, row.rationale, row.superseded_by_id) == ("Indent with tabs", "", None)
    assert peer_card_of(principal=tenant_a.principal).facts == {}
    assert peer_card_of(principal=tenant_b.principal).facts == {"editor": "emacs"}


@pytest.mark.parametrize("char", [NUL, SURROGATE], ids=["nul", "surrogate"])
def test_services_refuse_it_for_every_other_caller(tenant_a: Tenant, tenant_b: Tenant, char: str) -> None:
    """What the dashboard, the CLI (argv may hold surrogates) and the jobs reach: the same rule, same error."""
    row = knowledge_teach(principal=tenant_a.principal, rule="Indent with tabs").item
    before = _rows()
    a = tenant_a.principal
    calls: list[tuple[str, Callable[[], object]]] = [
        ("rule", lambda: knowledge_teach(principal=a, rule=f"tabs {char} always")),
        ("tags[0]", lambda: knowledge_teach(principal=a, rule="tabs always", tags=[f"t{char}"])),
        ("trigger", lambda: knowledge_edit(principal=a, item_id=row.id, content="Indent with tabs",
                                           trigger=f"when {char}", rationale="", type=row.type, tags=[],
                                           confidence=0.5)),
        ("rationale", lambda: knowledge_supersede(principal=a, item_id=row.id, content="Indent with spaces",
                                                  rationale=f"why {char}")),
        ("facts.editor", lambda: peer_card_set(user=tenant_a.user, facts={"editor": f"vi{char}m"})),
        ("name", lambda: project_ensure_named(user=tenant_a.user, name=f"New {char}")),
        ("name", lambda: org_create(user=tenant_a.user, name=f"Team {char}")),
        ("label", lambda: token_create(user=tenant_a.user, label=f"lap{char}top")),
        ("projectName", lambda: session_open(principal=a, project_name=f"Side {char}")),
        ("prompt", lambda: session_open(principal=a, prompt=f"fix {char} it")),
    ]
    for field, call in calls:
        with pytest.raises(ValidationFailed) as caught:
            call()
        assert caught.value.details == {"field": field}, field
    assert _rows() == before
    row.refresh_from_db()
    assert (row.trigger, row.superseded_by_id) == ("", None)


def test_a_logged_payload_with_nan_or_infinity_is_refused_over_mcp(client: Any, tenant_a: Tenant,
                                                                    tenant_b: Tenant) -> None:
    """Python's JSON reader takes `NaN` and `1e999`; `jsonb` does not. The call answers VALIDATION naming the
    number, as any other bad payload does, instead of an internal error, and stores nothing."""
    from tests.mcpgw.conftest import Mcp, call_tool, error_of

    mcp = Mcp(client, tenant_a.user_raw)
    sid = call_tool(mcp, "brain_start_session", {})["structuredContent"]["sessionId"]
    before = _rows()
    for payload, where in (({"ratio": float("nan")}, "payload.ratio"), ({"n": [1, float("inf")]}, "payload.n[1]")):
        result = call_tool(mcp, "brain_log_event", {"sessionId": sid, "eventType": "note", "payload": payload})
        error = error_of(result)
        assert error["code"] == "VALIDATION" and error["message"].startswith(f"{where} must be a finite number")
    # nested 900 deep (well under 16 KB): refused by name, where walking it ran out of stack (an internal error)
    deep: Any = "bottom"
    for _ in range(900):
        deep = {"d": deep}
    error = error_of(call_tool(mcp, "brain_log_event", {"sessionId": sid, "eventType": "note", "payload": deep}))
    assert error["code"] == "VALIDATION" and "nested more than 32 levels deep" in error["message"]
    assert _rows() == before
