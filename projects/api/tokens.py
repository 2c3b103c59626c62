"""/api/v1/tokens: mint, list and revoke the caller's tokens (user-scoped credentials only)."""

from __future__ import annotations

import uuid
from typing import Literal

from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from ninja import Query, Router, Status

from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.pagination import PageLimit, paginate
from projects.api.schemas import TextQuery, TokenCreateIn, TokenCreateOut, TokenOut, TokenPage
from projects.models import ApiToken, User
from projects.selectors.accounts import project_visible, tokens_of
from projects.selectors.addressed import account_user
from projects.services.accounts import token_create, token_revoke

router = Router(tags=["tokens"])
ERRORS = {400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope}
TOKEN_KEYS = ("-created_at", "-id")


class TokenFilters(TextQuery):
    scope: Literal["user", "project"] | None = None
    projectId: uuid.UUID | None = None  # noqa: N815
    active: bool | None = None
    cursor: str | None = None
    limit: PageLimit = None


def _account(request: HttpRequest) -> User:
    return account_user(principal=principal_of(request), action="manage tokens")


def _filtered(qs: QuerySet[ApiToken], filters: TokenFilters) -> QuerySet[ApiToken]:
    if filters.scope == "user":
        qs = qs.filter(project__isnull=True)
    elif filters.scope == "project":
        qs = qs.filter(project__isnull=False)
    if filters.projectId:
        qs = qs.filter(project_id=filters.projectId)
    if filters.active is not None:
        usable = Q(revoked_at__isnull=True) & (Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        qs = qs.filter(usable) if filters.active else qs.exclude(usable)
    return qs


@router.get("", response={200: TokenPage, **ERRORS}, summary="List your tokens")
def list_tokens(request: HttpRequest, filters: Query[TokenFilters]) -> TokenPage:
    """Newest first. Only prefixes are shown: a raw token is returned once, when minted."""
    qs = _filtered(tokens_of(user=_account(request)), filters)
    page = paginate(qs, keys=TOKEN_KEYS, cursor=filters.cursor, limit=filters.limit)
    return TokenPage(items=[TokenOut.of(t) for t in page.items], nextCursor=page.next_cursor)


@router.post("", response={201: TokenCreateOut, **ERRORS}, summary="Mint a token")
def create_token(request: HttpRequest, payload: TokenCreateIn) -> Status[TokenCreateOut]:
    user = _account(request)
    project = None
    if payload.projectId is not None:
        project = project_visible(principal=principal_of(request), project_id=payload.projectId)
    token, raw = token_create(user=user, project=project, label=payload.label, expires_at=payload.expiresAt)
    return Status(201, TokenCreateOut(**TokenOut.of(token).model_dump(), token=raw))


@router.post("/{token_id}/revoke", response={200: TokenOut, **ERRORS}, summary="Revoke a token")
def revoke_token(request: HttpRequest, token_id: uuid.UUID) -> TokenOut:
    """Immediate: the token's next request, over MCP or this API, is refused. Revoking twice is harmless."""
    user = _account(request)
    token = token_revoke(user=user, token_id=token_id)
    return TokenOut.of(tokens_of(user=user).get(pk=token.pk))
