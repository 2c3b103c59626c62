"""/api/v1/action-items and /api/v1/peer-card: the caller's own assignments and hard facts."""

from __future__ import annotations

import uuid

from django.http import HttpRequest
from ninja import Query, Router, Schema

from knowledge.api.schemas import ActionItemOut, ActionItemPage, PeerCardIn, PeerCardOut
from knowledge.selectors.actions import ORDER, ActionStatus, action_items_for
from knowledge.selectors.live import peer_card_of
from knowledge.services.actions import action_item_resolve
from knowledge.services.peer import peer_card_set
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.pagination import PageLimit, paginate
from projects.selectors.addressed import account_user

actions_router = Router(tags=["action items"])
peer_router = Router(tags=["peer card"])
ERRORS = {400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope}


class ActionFilters(Schema):
    status: ActionStatus = "open"
    projectId: uuid.UUID | None = None  # noqa: N815
    cursor: str | None = None
    limit: PageLimit = None


@actions_router.get("", response={200: ActionItemPage, **ERRORS}, summary="Your action items")
def list_action_items(request: HttpRequest, filters: Query[ActionFilters]) -> ActionItemPage:
    """Action items tagged `for:<your email>` in visible projects: open ones blockers first then oldest
    (as a session open lists them), resolved ones most recent first."""
    qs = action_items_for(principal=principal_of(request), status=filters.status, project_id=filters.projectId)
    page = paginate(qs, keys=ORDER[filters.status], cursor=filters.cursor, limit=filters.limit)
    return ActionItemPage(items=[ActionItemOut.of(r) for r in page.items], nextCursor=page.next_cursor)


@actions_router.post("/{item_id}/resolve", response={200: ActionItemOut, **ERRORS}, summary="Resolve an action item")
def resolve_action_item(request: HttpRequest, item_id: uuid.UUID) -> ActionItemOut:
    """Any action item of a project you can see, like resolvedActionItemIds; resolving twice is harmless."""
    return ActionItemOut.of(action_item_resolve(principal=principal_of(request), item_id=item_id))


@peer_router.get("", response={200: PeerCardOut, **ERRORS}, summary="Your peer card")
def get_peer_card(request: HttpRequest) -> PeerCardOut:
    return PeerCardOut.of(peer_card_of(principal=principal_of(request)))


@peer_router.put("", response={200: PeerCardOut, **ERRORS}, summary="Replace your peer card")
def replace_peer_card(request: HttpRequest, payload: PeerCardIn) -> PeerCardOut:
    """The card belongs to the user, not to a project, so a project-scoped token may read it but not write it."""
    principal = principal_of(request)
    peer_card_set(user=account_user(principal=principal, action="change the peer card"), facts=payload.facts)
    return PeerCardOut.of(peer_card_of(principal=principal))
