"""Reads of orgs, members and invitations, narrowed to orgs the caller belongs to."""

from __future__ import annotations

import re

from django.db.models import QuerySet

from brain.errors import NotFound
from projects.models import SLUG_MAX, Invitation, Membership, Org, User

# Org slugs are ASCII slugs (services/orgs.py, services/accounts.py). Anything else names no org, and is not
# sent to the database: a NUL there is an error of PostgreSQL's, not a miss (GET /api/v1/orgs/%00 was a 500).
SLUG_SHAPE = re.compile(rf"[-a-zA-Z0-9_]{{1,{SLUG_MAX}}}\Z")


def org_of_member(*, user: User, slug: str) -> Org:
    """An org the user belongs to; a missing org and someone else's give the same NOT_FOUND."""
    if not SLUG_SHAPE.match(slug):
        raise NotFound("org not found: an org slug has only letters a-z, digits, '-' and '_'")
    org = Org.objects.filter(slug=slug, memberships__user=user).first()
    if org is None:
        raise NotFound(f"org {slug} not found")
    return org


def role_in(*, user: User, org: Org) -> str | None:
    return Membership.objects.filter(org=org, user=user).values_list("role", flat=True).first()


MEMBERS_PAGE = 50  # rows of an org page's member list


def memberships_of_org(*, user: User, org: Org) -> QuerySet[Membership]:
    """The org's members if the user is one of them (none otherwise), by role then e-mail; the id makes the order
    total, so a page boundary never skips or repeats a member."""
    return Membership.objects.filter(org=org, org__memberships__user=user).select_related("user").order_by(
        "role", "user__email", "id"
    )


def memberships_of_user(*, user: User) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("org").order_by("org__personal_for", "org__name")


def invitations_open(*, user: User, org: Org) -> QuerySet[Invitation]:
    """Open invitations of an org, for its owners only (members see none)."""
    return Invitation.objects.filter(
        org=org, org__memberships__user=user, org__memberships__role=Membership.Role.OWNER,
        accepted_at__isnull=True, revoked_at__isnull=True,
    )
