"""Writes for accounts, orgs, projects and tokens. Each function is one transaction."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from brain.errors import Conflict, NotFound, ValidationFailed
from brain.sql_rows import xact_lock
from brain.text import text_storable
from projects.models import (
    PROJECT_NAME_MAX,
    SLUG_MAX,
    STACK_NAME_MAX,
    TOKEN_LABEL_MAX,
    TOKEN_PREFIX,
    TOKEN_PUBLIC_HEX,
    ApiToken,
    AuditAction,
    Membership,
    Org,
    Project,
    User,
)
from projects.scope import Principal
from projects.selectors.accounts import orgs_of, project_in_org_by_name, token_digest
from projects.selectors.addressed import account_user
from projects.services.audit import audit_record

# last_used_at is a hint for people, not an audit trail: refresh it at most once a minute.
TOKEN_TOUCH_INTERVAL = timedelta(minutes=1)


def _unique_slug(base: str, taken: set[str], max_len: int = SLUG_MAX) -> str:
    root = (slugify(base) or "project")[: max_len - 6]
    slug, n = root, 2
    while slug in taken:
        slug, n = f"{root}-{n}", n + 1
    return slug


@transaction.atomic
def password_check(*, password: str, email: str) -> None:
    """The sign-up page's rule for every way a password is set (AUTH_PASSWORD_VALIDATORS), or VALIDATION."""
    try:
        password_validation.validate_password(password, User(email=email))
    except DjangoValidationError as exc:
        raise ValidationFailed("password rejected: " + " ".join(exc.messages)) from None


def user_create(*, email: str, password: str | None = None, is_staff: bool = False, confirmed: bool = True) -> User:
    """Creates an active user and its personal org (owner membership), or raises VALIDATION/CONFLICT.
    `confirmed=False` for a sign-up nobody has verified (the address is only what the visitor typed).

    One transaction: a user is never left without the personal org every project lookup needs. Sign-ups take turns
    at picking a personal slug (two at once, alice@a and alice@b, both chose `personal-alice`, and the second
    failed on the slug's unique index after its user was stored); the same e-mail twice at once (a double click)
    is a CONFLICT, not a 500."""
    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except DjangoValidationError:
        raise ValidationFailed(f"{email!r} is not a valid e-mail address") from None
    if User.objects.filter(email=email).exists():
        raise Conflict(f"a user with e-mail {email} already exists")
    if password is not None:
        password_check(password=password, email=email)
    try:
        with transaction.atomic():
            return _user_insert(email, password, is_staff, confirmed)
    except IntegrityError:
        if User.objects.filter(email=email).exists():
            raise Conflict(f"a user with e-mail {email} already exists") from None
        raise


def _user_insert(email: str, password: str | None, is_staff: bool, confirmed: bool) -> User:
    user = User.objects.create_user(email, password, is_staff=is_staff, is_superuser=is_staff,
                                    email_confirmed_at=timezone.now() if confirmed else None)
    xact_lock("personal-org-create")
    taken = set(Org.objects.filter(slug__startswith="personal-").values_list("slug", flat=True))
    org = Org.objects.create(
        name=email, slug=_unique_slug(f"personal-{email.split('@')[0]}", taken), personal_for=user
    )
    Membership.objects.create(org=org, user=user, role=Membership.Role.OWNER)
    return user


def _clean_project_fields(name: str, framework: str | None, language: str | None) -> tuple[str, str, str]:
    text_storable(name=name, framework=framework, language=language)
    name = (name or "").strip()
    if not name:
        raise ValidationFailed(f"name is required: pass a project name of 1-{PROJECT_NAME_MAX} characters")
    if len(name) > PROJECT_NAME_MAX:
        raise ValidationFailed(f"name is {len(name)} characters; the limit is {PROJECT_NAME_MAX}")
    for field, value in (("framework", framework), ("language", language)):
        if value and len(value) > STACK_NAME_MAX:
            raise ValidationFailed(f"{field} is longer than {STACK_NAME_MAX} characters")
    return name, (framework or "").strip(), (language or "").strip()


_CREATE_ATTEMPTS = 3


def _creates_serialized(org: Org) -> None:
    """Project creates in one org take turns until their transaction ends. Without this, concurrent creates
    under names that slugify alike (every non-Latin name is "project") each computed the same next free
    slug from committed rows and met the other's uncommitted one, again and again: after three rounds the
    unique slug index answered 500 (`brain bench fuzz`, 20,000 REST cases, 4-8 clients). A create is rare;
    waiting for the one before costs milliseconds and makes the lookup see it."""
    xact_lock(f"project-create:{org.pk}")


def project_ensure_named(
    *, user: User, name: str, framework: str | None = None, language: str | None = None, org: Org | None = None
) -> tuple[Project, bool]:
    """Finds the project by case-insensitive name in the user's personal org (or `org`), or creates it.

    framework and language are written only on creation. Safe under concurrent calls. An `org` the
    user is not a member of gives NOT_FOUND.
    """
    name, framework, language = _clean_project_fields(name, framework, language)
    if org is None:
        org = Org.objects.get(personal_for=user)
    elif not Membership.objects.filter(org=org, user=user).exists():
        raise NotFound(f"org {org.pk} not found")
    with transaction.atomic():
        _creates_serialized(org)
        for _ in range(_CREATE_ATTEMPTS):
            existing = project_in_org_by_name(org=org, name=name)
            if existing:
                return existing, False
            try:
                return _project_insert(user=user, org=org, name=name, framework=framework, language=language), True
            except IntegrityError:
                # A writer that bypasses the turn above (a migration, the admin) took this name (the lookup
                # now finds it) or the slug computed here (the next attempt sees it taken): look again.
                continue
    raise Conflict(f"project {name!r} could not be created: other requests kept taking its name or slug; "
                   "retry", details={"retryable": True})


def _project_insert(*, user: User, org: Org, name: str, framework: str, language: str) -> Project:
    with transaction.atomic():
        taken = set(Project.objects.filter(org=org).values_list("slug", flat=True))
        project = Project.objects.create(
            org=org, created_by=user, name=name, slug=_unique_slug(name, taken), framework=framework,
            language=language,
        )
        audit_record(actor=user, action=AuditAction.PROJECT_CREATED, project=project,
                     target=f"project:{project.id}", summary=name)
        return project


def project_create_named(
    *, principal: Principal, name: str, framework: str | None = None, language: str | None = None,
    org_id: uuid.UUID | None = None,
) -> tuple[Project, bool]:
    """The caller's create (MCP and REST): refused for project-scoped tokens, else idempotent by name in
    the personal org or in `org_id`, an org the caller belongs to (another one is NOT_FOUND)."""
    user = account_user(principal=principal, action="create projects")
    org: Org | None = None
    if org_id is not None:
        org = orgs_of(user=user).filter(pk=org_id).first()
        if org is None:
            raise NotFound(f"org {org_id} not found")
    return project_ensure_named(user=user, name=name, framework=framework, language=language, org=org)


def project_ensure_default(*, user: User) -> Project:
    """The lazy "Default" project for a user who has none yet."""
    project, _ = project_ensure_named(user=user, name="Default")
    return project


def _token_cap_check(user: User) -> None:
    """At most settings.MAX_TOKENS_PER_USER usable tokens per user. The user row is locked first, so two
    concurrent mints cannot both pass the count (the lock is held until the mint commits)."""
    User.objects.select_for_update().filter(pk=user.pk).first()
    cap = settings.MAX_TOKENS_PER_USER
    now = timezone.now()
    active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).exclude(expires_at__lte=now).count()
    if active >= cap:
        raise Conflict(f"you have {active} active tokens, the most allowed (BRAIN_MAX_TOKENS_PER_USER={cap}); "
                       "revoke unused ones in Settings > Tokens or with `brain token revoke`",
                       details={"activeTokens": active, "cap": cap})


@transaction.atomic
def token_create(
    *,
    user: User,
    project: Project | None = None,
    label: str = "",
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Mints a token; returns the row and the raw secret, which is never stored and shown once."""
    text_storable(label=label)
    if project is not None and not Membership.objects.filter(org=project.org_id, user=user).exists():
        raise NotFound(f"project {project.pk} not found")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed("expires_at must be in the future")
    _token_cap_check(user)
    public = secrets.token_hex(TOKEN_PUBLIC_HEX // 2)
    raw = f"{TOKEN_PREFIX}{public}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user, project=project, label=label.strip()[:TOKEN_LABEL_MAX], prefix=f"{TOKEN_PREFIX}{public}",
        digest=token_digest(raw), expires_at=expires_at,
    )
    audit_record(actor=user, action=AuditAction.TOKEN_MINTED, project=project, target=f"token:{token.prefix}",
                 summary=token.label)
    return token, raw


@transaction.atomic
def token_revoke(*, user: User, token_id: uuid.UUID | str) -> ApiToken:
    """Revokes one of the user's tokens; the next request made with it fails."""
    token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is None:
        raise NotFound(f"token {token_id} not found")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at", "updated_at"])
        audit_record(actor=user, action=AuditAction.TOKEN_REVOKED, project=token.project,
                     target=f"token:{token.prefix}", summary=token.label)
    return token


def token_touch(*, token: ApiToken) -> None:
    """Records use without a write per request: one conditional UPDATE at most once a minute."""
    now = timezone.now()
    if token.last_used_at and now - token.last_used_at < TOKEN_TOUCH_INTERVAL:
        return
    cutoff = now - TOKEN_TOUCH_INTERVAL
    from django.db.models import Q

    ApiToken.objects.filter(pk=token.pk).filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff)).update(
        last_used_at=now
    )
    token.last_used_at = now
