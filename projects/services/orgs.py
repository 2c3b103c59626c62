"""Writes for team orgs, memberships and invitations. Each function is one transaction."""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from brain.errors import Conflict, ForbiddenProject, NotFound, ValidationFailed
from brain.sql_rows import xact_lock
from brain.text import text_storable
from projects.models import ORG_NAME_MAX, SLUG_MAX, AuditAction, Invitation, Membership, Org, User
from projects.selectors.accounts import token_digest
from projects.services.audit import audit_record

INVITATION_TTL = timedelta(days=7)


def _require_owner(*, user: User, org: Org) -> None:
    if not Membership.objects.filter(org=org, user=user, role=Membership.Role.OWNER).exists():
        raise ForbiddenProject(f"only an owner of {org.name} may do this")


@transaction.atomic
def org_create(*, user: User, name: str) -> Org:
    """A team org with the caller as its only owner; CONFLICT when the caller already owns a team of that name
    (a form sent twice made two teams of one name, with one member each).

    Creates take turns (an org is created rarely): the name check and the next free slug then see the create
    before, where two at once both picked the same slug and the second ended on the unique index as a 500."""
    text_storable(name=name)
    name = " ".join((name or "").split())  # one line: it is shown in lists and mail subjects
    if not name or len(name) > ORG_NAME_MAX:
        raise ValidationFailed(f"an org name needs 1-{ORG_NAME_MAX} characters")
    xact_lock("org-create")
    owned = Membership.objects.filter(user=user, role=Membership.Role.OWNER, org__personal_for__isnull=True,
                                      org__name__iexact=name).select_related("org").first()
    if owned is not None:
        raise Conflict(f"you already own a team called {owned.org.name} (/orgs/{owned.org.slug}/); "
                       "pick another name or use that one")
    root = (slugify(name) or "team")[: SLUG_MAX - 10]  # room for a "-<n>" suffix
    taken = set(Org.objects.filter(slug__startswith=root).values_list("slug", flat=True))
    slug, n = root, 2
    while slug in taken:
        slug, n = f"{root}-{n}", n + 1
    org = Org.objects.create(name=name, slug=slug)
    Membership.objects.create(org=org, user=user, role=Membership.Role.OWNER)
    return org


@transaction.atomic
def invitation_create(
    *, user: User, org: Org, email: str, role: str = Membership.Role.MEMBER
) -> tuple[Invitation, str]:
    """An open invitation and its raw link secret (shown in the e-mail only). Owners of team orgs only."""
    _require_owner(user=user, org=org)
    if org.personal_for_id is not None:
        raise ValidationFailed("a personal org cannot take members; create a team org and invite there")
    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except DjangoValidationError:
        raise ValidationFailed(f"{email!r} is not a valid e-mail address") from None
    if role not in Membership.Role.values:
        raise ValidationFailed(f"role must be one of {', '.join(Membership.Role.values)}")
    if Membership.objects.filter(org=org, user__email=email).exists():
        raise Conflict(f"{email} is already a member of {org.name}")
    raw = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        org=org, email=email, role=role, invited_by=user, digest=token_digest(raw),
        expires_at=timezone.now() + INVITATION_TTL,
    )
    return invitation, raw


@transaction.atomic
def invitation_accept(*, user: User, raw: str) -> Membership:
    """Adds the signed-in user to the org, if the link is open and addressed to the user's e-mail."""
    invitation = Invitation.objects.select_for_update().filter(digest=token_digest(raw)).first()
    if invitation is None or not invitation.is_open:
        raise NotFound("this invitation link is unknown, expired, revoked or already used; ask for a new one")
    if invitation.email != user.email.lower():
        raise ForbiddenProject(
            f"this invitation is for {invitation.email}; sign in with that address to accept it"
        )
    try:
        with transaction.atomic():
            membership = Membership.objects.create(org=invitation.org, user=user, role=invitation.role)
    except IntegrityError:
        membership = Membership.objects.get(org=invitation.org, user=user)
    invitation.accepted_at, invitation.accepted_by = timezone.now(), user
    invitation.save(update_fields=["accepted_at", "accepted_by", "updated_at"])
    audit_record(actor=user, action=AuditAction.MEMBER_ADDED, org=invitation.org, target=f"user:{user.email}",
                 summary=f"joined as {membership.role}")
    return membership


@transaction.atomic
def invitation_revoke(*, user: User, org: Org, invitation_id: uuid.UUID | str) -> None:
    """Closes an open invitation; its link stops working at once."""
    _require_owner(user=user, org=org)
    updated = Invitation.objects.filter(org=org, pk=invitation_id, accepted_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if not updated:
        raise NotFound(f"invitation {invitation_id} not found")


def _owners_left_after(org: Org, membership: Membership) -> int:
    return Membership.objects.filter(org=org, role=Membership.Role.OWNER).exclude(pk=membership.pk).count()


@transaction.atomic
def membership_set_role(*, user: User, org: Org, membership_id: uuid.UUID | str, role: str) -> Membership:
    """Changes a member's role; an org always keeps at least one owner."""
    _require_owner(user=user, org=org)
    if role not in Membership.Role.values:
        raise ValidationFailed(f"role must be one of {', '.join(Membership.Role.values)}")
    membership = Membership.objects.select_for_update().filter(org=org, pk=membership_id).first()
    if membership is None:
        raise NotFound(f"member {membership_id} not found")
    if role != Membership.Role.OWNER and _owners_left_after(org, membership) == 0:
        raise ValidationFailed("an org needs at least one owner; make someone else owner first")
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    return membership


@transaction.atomic
def membership_remove(*, user: User, org: Org, membership_id: uuid.UUID | str) -> Membership:
    """Removes a member (owners remove anyone, members remove themselves); the last owner stays."""
    membership = Membership.objects.select_for_update().select_related("user").filter(org=org, pk=membership_id).first()
    if membership is None:
        raise NotFound(f"member {membership_id} not found")
    if membership.user_id != user.pk:
        _require_owner(user=user, org=org)
    if org.personal_for_id is not None:
        raise ValidationFailed("the owner of a personal org cannot leave it")
    if membership.role == Membership.Role.OWNER and _owners_left_after(org, membership) == 0:
        raise ValidationFailed("an org needs at least one owner; make someone else owner first")
    membership.delete()
    audit_record(actor=user, action=AuditAction.MEMBER_REMOVED, org=org, target=f"user:{membership.user.email}")
    return membership


@transaction.atomic
def org_review_set(*, user: User, org: Org, required: bool) -> Org:
    """Switches owner review of rules taught by non-owner members in the org's projects (owners of team orgs only).
    Switching it off leaves pending rows pending: each still needs an owner's decision."""
    _require_owner(user=user, org=org)
    if org.personal_for_id is not None:
        raise ValidationFailed("a personal org has no other members to review; switch review on in a team org")
    if not isinstance(required, bool):
        raise ValidationFailed("requireMemberReview must be true or false")
    if org.require_member_review != required:
        Org.objects.filter(pk=org.pk).update(require_member_review=required, updated_at=timezone.now())
        org.require_member_review = required
        audit_record(actor=user, action=AuditAction.ORG_REVIEW_SET, org=org, target=f"org:{org.slug}",
                     summary=f"review of members' rules {'on' if required else 'off'}")
    return org
