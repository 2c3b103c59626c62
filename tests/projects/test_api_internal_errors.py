"""An unexpected exception behind /api/v1 is a 500 in the error envelope, code INTERNAL, whose message
and details carry a short ref that is also on the error's log line (with the traceback). The faults are
injected by making a service or selector the route calls raise, as a failing database or bug would."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from brain.logs import LogfmtFormatter
from projects.models import Project
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db
JSON = "application/json"


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the disk is on fire")


def _internal(response: Any, caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    error = api_error(response, 500, "INTERNAL")
    ref = error["details"]["ref"]
    assert re.fullmatch(r"[0-9a-f]{8}", ref) and f"(ref {ref})" in error["message"]
    assert "on fire" not in error["message"] and "Traceback" not in response.content.decode()
    records = [r for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "api.internal_error"]
    assert len(records) == 1 and records[0].levelno == logging.ERROR
    assert records[0].exc_info is not None and records[0].exc_info[0] is RuntimeError
    line = LogfmtFormatter().format(records[0])
    assert f"ref={ref}" in line and "error=RuntimeError" in line and "the disk is on fire" in line
    fields: dict[str, Any] = records[0].op_fields  # type: ignore[attr-defined]
    return fields


def test_a_failing_write_is_an_internal_envelope_with_a_logged_ref(
    tenant_a: Tenant, tenant_b: Tenant, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("projects.api.projects.project_create_named", _boom)
    before = Project.objects.count()
    fields = _internal(bearer(tenant_a.user_raw).post("/api/v1/projects", {"name": "Acme"}, content_type=JSON), caplog)
    assert (fields["method"], fields["path"]) == ("POST", "/api/v1/projects")
    assert Project.objects.count() == before
    assert bearer(tenant_b.user_raw).get("/api/v1/projects").status_code == 200


def test_a_failing_read_is_an_internal_envelope(tenant_a: Tenant, caplog: pytest.LogCaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("knowledge.api.knowledge.knowledge_search", _boom)
    _internal(bearer(tenant_a.user_raw).get("/api/v1/knowledge/search?q=deploy"), caplog)


def test_a_failure_while_authenticating_is_an_internal_envelope(tenant_a: Tenant, caplog: pytest.LogCaptureFixture,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("projects.api.auth.token_for_raw", _boom)
    _internal(bearer(tenant_a.user_raw).get("/api/v1/projects"), caplog)
