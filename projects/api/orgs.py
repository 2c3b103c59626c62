"""/api/v1/orgs: the caller's orgs and their settings (owner review of members' rules). Account-wide, so a
project-scoped token may not use them."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope
from projects.api.schemas import OrgOut, OrgSettingsIn
from projects.models import User
from projects.selectors.addressed import account_user
from projects.selectors.orgs import memberships_of_user, org_of_member, role_in
from projects.services.orgs import org_review_set

router = Router(tags=["orgs"])
ERRORS = {400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope}


def _account(request: HttpRequest, action: str) -> User:
    return account_user(principal=principal_of(request), action=action)


@router.get("", response={200: list[OrgOut], **ERRORS}, summary="List your orgs")
def list_orgs(request: HttpRequest) -> list[OrgOut]:
    """Your personal org first, then team orgs by name, each with your role and its settings."""
    return [OrgOut.of(m.org, m.role) for m in memberships_of_user(user=_account(request, "list orgs"))]


@router.get("/{slug}", response={200: OrgOut, **ERRORS}, summary="One of your orgs")
def get_org(request: HttpRequest, slug: str) -> OrgOut:
    user = _account(request, "read org settings")
    org = org_of_member(user=user, slug=slug)
    return OrgOut.of(org, role_in(user=user, org=org) or "")


@router.patch("/{slug}", response={200: OrgOut, **ERRORS}, summary="Change an org's settings (owners)")
def update_org(request: HttpRequest, slug: str, payload: OrgSettingsIn) -> OrgOut:
    """`requireMemberReview`: rules taught by non-owner members wait for an owner's approval before anyone else
    retrieves them (GET /knowledge/review, POST /knowledge/{id}/approve or /reject)."""
    user = _account(request, "change org settings")
    org = org_of_member(user=user, slug=slug)
    if payload.requireMemberReview is not None:
        org = org_review_set(user=user, org=org, required=payload.requireMemberReview)
    return OrgOut.of(org, role_in(user=user, org=org) or "")
