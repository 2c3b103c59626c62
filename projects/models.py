"""Users, orgs, memberships, projects and API tokens: who may see what."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from brain.models import TimestampedModel

# Field limits, named once: the models, services, forms and the REST and MCP schemas all read these.
ORG_NAME_MAX = 200
SLUG_MAX = 80
PROJECT_NAME_MAX = 120
STACK_NAME_MAX = 60  # a framework or language name (projects, knowledge rows, sessions)
TOKEN_LABEL_MAX = 120
AUDIT_TARGET_MAX = 200
AUDIT_SUMMARY_MAX = 300
# A raw token reads `ebt_<8 hex>_<secret>`; `ebt_<8 hex>` is its prefix, the part lists and logs show.
TOKEN_PREFIX = "ebt_"
TOKEN_PUBLIC_HEX = 8


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password) if password else user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in with an e-mail address (stored lowercased, unique)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(unique=True, max_length=254)
    display_name = models.CharField(max_length=120, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)
    # When the address was shown to be this account's: a sign-up link used, a password reset by mail, or an
    # account an operator made. Null for an open sign-up nobody has verified: anyone may have typed the address.
    email_confirmed_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar[UserManager] = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    def __str__(self) -> str:
        return self.email


class Org(TimestampedModel):
    """A group of people sharing projects. Every user has one personal org, created with the user."""

    name = models.CharField(max_length=ORG_NAME_MAX)
    slug = models.SlugField(max_length=SLUG_MAX, unique=True)
    personal_for = models.OneToOneField(
        User, null=True, blank=True, on_delete=models.CASCADE, related_name="personal_org"
    )
    # When on, a rule a non-owner member teaches into this org's projects waits for an owner's approval
    # before anyone else can retrieve it or have it injected (knowledge.services.review).
    require_member_review = models.BooleanField(
        default=False, db_default=False, help_text="hold rules taught by non-owner members until an owner approves"
    )

    def __str__(self) -> str:
        return self.name


class Membership(TimestampedModel):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "user"], name="membership_unique_org_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.org} ({self.role})"


class Project(TimestampedModel):
    """A codebase or client whose sessions and knowledge belong together."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="projects")
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=PROJECT_NAME_MAX)
    slug = models.SlugField(max_length=SLUG_MAX)
    framework = models.CharField(max_length=STACK_NAME_MAX, blank=True)
    language = models.CharField(max_length=STACK_NAME_MAX, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(Lower("name"), "org", name="project_unique_name_ci_in_org"),
            models.UniqueConstraint(fields=["org", "slug"], name="project_unique_slug_in_org"),
        ]

    def __str__(self) -> str:
        return self.name


class ApiToken(TimestampedModel):
    """A bearer token. Only a SHA-256 digest of the secret is stored; `prefix` identifies it in UIs."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens"
    )
    label = models.CharField(max_length=TOKEN_LABEL_MAX, blank=True)
    prefix = models.CharField(max_length=16, db_index=True)  # TOKEN_PREFIX and TOKEN_PUBLIC_HEX characters
    digest = models.CharField(max_length=64, unique=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.label or 'unnamed'})"

    @property
    def scope(self) -> str:
        return "project" if self.project_id else "user"

    def is_usable(self, now: Any = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class Invitation(TimestampedModel):
    """An e-mailed link that adds its addressee to an org. Only a digest of the link secret is stored."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    invited_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"invitation of {self.email} to {self.org}"

    @property
    def is_open(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None and self.expires_at > timezone.now()


class LoginThrottle(models.Model):
    """Failed sign-ins per key ("email:…" or "ip:…") in the current window, shared by every web replica."""

    key = models.CharField(max_length=300, primary_key=True)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField()
    locked_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.failures} failures"


class AuditAction(models.TextChoices):
    TOKEN_MINTED = "token.minted", "Token minted"
    TOKEN_REVOKED = "token.revoked", "Token revoked"
    MEMBER_ADDED = "member.added", "Member added"
    MEMBER_REMOVED = "member.removed", "Member removed"
    PROJECT_CREATED = "project.created", "Project created"
    KNOWLEDGE_DELETED = "knowledge.deleted", "Knowledge deleted"
    KNOWLEDGE_RESTORED = "knowledge.restored", "Knowledge restored"
    KNOWLEDGE_SUPERSEDED = "knowledge.superseded", "Knowledge superseded"
    KNOWLEDGE_PROMOTED = "knowledge.promoted", "Knowledge promoted to your scope"
    PROPOSAL_APPROVED = "proposal.approved", "Proposal approved"
    ORG_REVIEW_SET = "org.review_set", "Member rule review switched"
    KNOWLEDGE_APPROVED = "knowledge.approved", "Member rule approved"
    KNOWLEDGE_REJECTED = "knowledge.rejected", "Member rule rejected"


class AuditEvent(models.Model):
    """A security-relevant action, written by the service that did it; append-only (no update path).

    `org` is where owners read it: the project's org, or the actor's personal org for personal rows."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    org = models.ForeignKey(Org, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_email = models.EmailField(max_length=254, blank=True, help_text="kept when the user is deleted")
    action = models.CharField(max_length=40, choices=AuditAction.choices)
    target = models.CharField(max_length=AUDIT_TARGET_MAX, blank=True, help_text="kind:id of what was acted on")
    summary = models.CharField(max_length=AUDIT_SUMMARY_MAX, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["org", "-created_at"], name="audit_org_created")]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_email or 'system'}"


class IdempotencyKey(models.Model):
    """The first answer to a create made with a client's idempotency key, replayed on a retry.

    `holder` is the caller ("token:<id>", or "user:<id>" for a browser session) so a narrower token never
    sees what a broader one created; `scope` is the tool or REST route. The unique constraint makes two
    concurrent retries wait for each other instead of both writing."""

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    holder = models.CharField(max_length=80)
    scope = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64, help_text="sha256 of the request, minus the key")
    status = models.PositiveSmallIntegerField(default=0)
    body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["holder", "scope", "key"], name="idempotency_once")]

    def __str__(self) -> str:
        return f"{self.scope} {self.key}"
