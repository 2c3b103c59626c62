"""The audit log: services call `audit_record` inside their transaction, so an action and its record commit
together. Reads are `projects.selectors.audit`."""

from __future__ import annotations

from projects.models import AUDIT_SUMMARY_MAX, AUDIT_TARGET_MAX, AuditEvent, Org, Project, User


def audit_record(
    *, actor: User | None, action: str, org: Org | None = None, project: Project | None = None,
    target: str = "", summary: str = "",
) -> AuditEvent:
    """Appends one event. The org is the project's when a project is given, else `org`, else the actor's
    personal org (so a personal action is still readable by its owner)."""
    org_id = project.org_id if project is not None else (org.id if org is not None else None)
    if org_id is None and actor is not None:
        org_id = Org.objects.filter(personal_for=actor).values_list("id", flat=True).first()
    return AuditEvent.objects.create(
        org_id=org_id, actor=actor, actor_email=actor.email if actor else "", action=action,
        target=target[:AUDIT_TARGET_MAX], summary=summary[:AUDIT_SUMMARY_MAX],
    )
