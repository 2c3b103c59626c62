"""Wire shapes of the REST API (camelCase, like the MCP tools' results)."""
# ruff: noqa: N815

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from ninja import Field, Schema
from pydantic import BeforeValidator, ConfigDict, ValidationInfo, field_validator

from brain.errors import ValidationFailed
from brain.text import text_storable
from projects.models import PROJECT_NAME_MAX, STACK_NAME_MAX, TOKEN_LABEL_MAX, ApiToken, Org, Project
from projects.scope import Principal


def storable_field(value: Any, info: ValidationInfo) -> Any:
    """The core's text rule (`brain.text`) applied while parsing, so a query filter the route applies
    itself is covered too and a bad body is refused with the other field errors; the services apply the
    same rule to every caller whatever its interface."""
    try:
        text_storable(**{info.field_name or "value": value})
    except ValidationFailed as exc:
        raise ValueError(exc.message) from None
    return value


NO_NUL = "^[^\\u0000]*$"  # the storable-text rule as far as a JSON Schema can say it (brain/text.py)


def _declare_no_nul(node: Any) -> None:
    """Adds the NUL rule to every string property of a generated schema, so clients and fuzzers know it."""
    if isinstance(node, dict):
        if node.get("type") == "string" and "format" not in node and "enum" not in node:
            node.setdefault("pattern", NO_NUL)
        for value in node.values():
            _declare_no_nul(value)
    elif isinstance(node, list):
        for value in node:
            _declare_no_nul(value)


def _iso_only(value: Any) -> Any:
    """A date-time is an ISO 8601 string; pydantic would also take a number (`until=0.5`) as Unix time."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or "-" not in value.strip().lstrip("+-"):
        raise ValueError("must be an ISO 8601 date-time such as 2026-05-01T00:00:00Z")
    return value


IsoDateTime = Annotated[datetime, BeforeValidator(_iso_only)]


class StrictIn(Schema):
    """A request body: unknown fields are refused, text must be storable."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_declare_no_nul)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        return storable_field(value, info)


class TextQuery(Schema):
    """Query parameters whose text reaches PostgreSQL."""

    model_config = ConfigDict(json_schema_extra=_declare_no_nul)

    @field_validator("*")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        return storable_field(value, info)


class ProjectOut(Schema):
    id: uuid.UUID
    slug: str
    name: str
    orgId: uuid.UUID
    orgSlug: str
    orgName: str
    framework: str
    language: str
    isOwn: bool
    createdAt: datetime

    @staticmethod
    def of(project: Project, principal: Principal) -> ProjectOut:
        return ProjectOut(
            id=project.pk, slug=project.slug, name=project.name, orgId=project.org_id, orgSlug=project.org.slug,
            orgName=project.org.name, framework=project.framework, language=project.language,
            isOwn=project.org.personal_for_id == principal.user.pk, createdAt=project.created_at,
        )


class ProjectCreateIn(StrictIn):
    name: str = Field(min_length=1, max_length=PROJECT_NAME_MAX)
    framework: str | None = Field(default=None, max_length=STACK_NAME_MAX)
    language: str | None = Field(default=None, max_length=STACK_NAME_MAX)
    orgId: uuid.UUID | None = Field(default=None, description="An org you belong to; default: your personal org.")


class ProjectCreateOut(ProjectOut):
    created: bool


class ProjectPage(Schema):
    items: list[ProjectOut]
    nextCursor: str | None


class TokenOut(Schema):
    id: uuid.UUID
    label: str
    prefix: str
    scope: str = Field(description="user, or project when bound to projectId")
    projectId: uuid.UUID | None
    projectName: str | None
    createdAt: datetime
    lastUsedAt: datetime | None
    expiresAt: datetime | None
    revokedAt: datetime | None
    active: bool

    @staticmethod
    def of(token: ApiToken) -> TokenOut:
        return TokenOut(
            id=token.pk, label=token.label, prefix=token.prefix, scope=token.scope, projectId=token.project_id,
            projectName=token.project.name if token.project else None, createdAt=token.created_at,
            lastUsedAt=token.last_used_at, expiresAt=token.expires_at, revokedAt=token.revoked_at,
            active=token.is_usable(),
        )


class TokenCreateIn(StrictIn):
    label: str = Field(min_length=1, max_length=TOKEN_LABEL_MAX)
    projectId: uuid.UUID | None = Field(default=None, description="Bind the token to this project only.")
    expiresAt: IsoDateTime | None = Field(default=None, description="Must be in the future; default: never.")


    @field_validator("expiresAt")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        # PostgreSQL stores offsets only up to ±15:59; normalise every instant to UTC first.
        if value is None:
            return None
        try:
            return value.replace(tzinfo=value.tzinfo or UTC).astimezone(UTC)
        except OverflowError:
            raise ValueError("expiresAt is out of range") from None


class TokenCreateOut(TokenOut):
    token: str = Field(description="The raw secret. Shown in this response only; store it now.")


class TokenPage(Schema):
    items: list[TokenOut]
    nextCursor: str | None


class OrgOut(Schema):
    slug: str
    name: str
    personal: bool
    role: str = Field(description="your role: owner or member")
    requireMemberReview: bool = Field(description=(
        "rules taught by non-owner members reach others only after an owner approves them"))

    @staticmethod
    def of(org: Org, role: str) -> OrgOut:
        return OrgOut(slug=org.slug, name=org.name, personal=org.personal_for_id is not None, role=role,
                      requireMemberReview=org.require_member_review)


class OrgSettingsIn(StrictIn):
    requireMemberReview: bool | None = Field(None, strict=True, description="owners only; a boolean, not 0/1")
