"""Reads of the audit log: org owners see their orgs' events; staff use the admin."""

from __future__ import annotations

from django.db.models import QuerySet

from projects.models import AuditEvent, Membership, User

AUDIT_PAGE = 100


def audit_for_owner(*, user: User, org_id: str | None = None) -> QuerySet[AuditEvent]:
    """Events of the orgs the user owns (one org when given), newest first; others' orgs give nothing."""
    owned = Membership.objects.filter(user=user, role=Membership.Role.OWNER).values("org_id")
    qs = AuditEvent.objects.filter(org_id__in=owned).select_related("org")
    if org_id:
        qs = qs.filter(org_id=org_id)
    # The id breaks ties between events of one instant (a bulk action), so paging neither skips nor repeats one.
    return qs.order_by("-created_at", "-id")
