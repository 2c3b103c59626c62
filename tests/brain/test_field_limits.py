"""Every interface announces the same limit as the column it fills: forms, REST and MCP schemas read the
limits named beside the models, so none of them may drift from the database (or from each other)."""

from __future__ import annotations

from typing import Any

import pytest
from annotated_types import MaxLen
from django import forms
from django.db import models
from pydantic import BaseModel

from dashboard.forms import KnowledgeSearchForm
from knowledge.api.schemas import TeachIn as RestTeachIn
from knowledge.models import KnowledgeItem
from mcpgw.schemas_brain import LogEventIn, RetrieveContext, StartSessionIn
from mcpgw.schemas_brain import TeachIn as McpTeachIn
from mcpgw.tools.projects import CreateProjectIn
from projects.api.schemas import ProjectCreateIn, TokenCreateIn
from projects.forms import OrgCreateForm, TokenMintForm
from projects.models import ApiToken, Org, Project
from sessions.models import Session, SessionEvent


def _column(model: type[models.Model], name: str) -> int:
    field = model._meta.get_field(name)
    if isinstance(field, models.Field) and hasattr(field, "base_field"):  # an ArrayField: its items' limit
        field = field.base_field
    assert isinstance(field, models.Field) and field.max_length
    return int(field.max_length)


def _announced(interface: type[BaseModel] | type[forms.Form], name: str) -> int:
    if issubclass(interface, BaseModel):
        return next(m.max_length for m in interface.model_fields[name].metadata if isinstance(m, MaxLen))
    field: Any = interface.base_fields[name]
    return int(field.max_length)


@pytest.mark.parametrize(("model", "column", "interface", "name"), [
    (Project, "name", ProjectCreateIn, "name"),
    (Project, "name", CreateProjectIn, "name"),
    (Project, "name", StartSessionIn, "project_name"),
    (Project, "framework", ProjectCreateIn, "framework"),
    (Project, "language", CreateProjectIn, "language"),
    (KnowledgeItem, "framework", RestTeachIn, "framework"),
    (KnowledgeItem, "language", McpTeachIn, "language"),
    (KnowledgeItem, "language", RetrieveContext, "language"),
    (KnowledgeItem, "tags", KnowledgeSearchForm, "tag"),
    (KnowledgeItem, "source", KnowledgeSearchForm, "source"),
    (Session, "framework", StartSessionIn, "framework"),
    (Session, "client_type", StartSessionIn, "client_type"),
    (SessionEvent, "event_type", LogEventIn, "event_type"),
    (ApiToken, "label", TokenCreateIn, "label"),
    (ApiToken, "label", TokenMintForm, "label"),
    (Org, "name", OrgCreateForm, "name"),
])
def test_interfaces_announce_the_column_limit(
    model: type[models.Model], column: str, interface: type[BaseModel] | type[forms.Form], name: str
) -> None:
    assert _announced(interface, name) == _column(model, column)
