"""Helpers of the hostile-input suites: the other tenant's rows (seeded, fingerprinted, its secrets), and
sending a generated `HttpCase` through Django's test client."""

from __future__ import annotations

import uuid
from typing import Any

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.test import Client

from brain.bench.fuzz_cases import HttpCase
from knowledge.services.teach import knowledge_teach
from projects.models import ApiToken, Project, User
from projects.services.accounts import token_create
from tests.conftest import Tenant
from tests.support.closed_session import closed_session


def seed(tenant: Tenant, marker: str) -> tuple[list[str], list[str]]:
    """Rows of a tenant whose texts carry `marker`; returns (row ids, secret texts)."""
    rule = knowledge_teach(principal=tenant.principal, rule=f"Deploy with the {marker} checklist", type="reflex").item
    session = closed_session(user=tenant.user, project=tenant.project, events=[("note", f"note {marker}", {})])
    spare, _ = token_create(user=tenant.user, label="spare")  # revocable without locking the fuzzer out
    ids = [str(rule.id), str(session.id), str(tenant.project.id), str(spare.id)]
    return ids, [marker, tenant.user_raw, tenant.project_raw]


def _user_field(model: type[models.Model]) -> str | None:
    for name in ("owner", "user"):
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        if getattr(field, "related_model", None) is User:
            return name
    return None


def fingerprint(user: User) -> dict[str, list[dict[str, Any]]]:
    """Every row of every model that belongs to `user` (by owner/user, token, or its orgs' projects)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for model in apps.get_models():
        if model is User:
            continue
        field = _user_field(model)
        query: models.QuerySet[Any] | None = None
        if field:
            query = model._default_manager.filter(**{field: user})
        elif model is Project:
            query = Project.objects.filter(org__memberships__user=user)
        elif any(getattr(f, "related_model", None) is ApiToken for f in model._meta.fields):
            token_field = next(f.name for f in model._meta.fields if getattr(f, "related_model", None) is ApiToken)
            query = model._default_manager.filter(**{f"{token_field}__user": user})
        if query is not None:
            rows[model._meta.label] = sorted(query.values(), key=lambda row: str(row.get("id", row)))
    rows["User"] = [dict(row) for row in User.objects.filter(pk=user.pk).values()]
    return rows


def send(client: Client, case: HttpCase) -> tuple[int, str, bytes]:
    """(status, Content-Type, body) of Django's test client's answer to one generated request."""
    headers = dict(case.headers)
    content_type = headers.pop("Content-Type", "")
    response = client.generic(case.method, case.path, data=case.body, content_type=content_type, headers=headers)
    streamed = getattr(response, "streaming_content", None)  # the export streams its file
    body = b"".join(streamed) if response.streaming and streamed is not None else response.content
    return response.status_code, response.get("Content-Type", ""), body


def marker() -> str:
    return f"zq-secret-{uuid.uuid4().hex[:12]}"
