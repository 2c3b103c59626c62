from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from projects.models import (
    ApiToken,
    AuditEvent,
    IdempotencyKey,
    Invitation,
    LoginThrottle,
    Membership,
    Org,
    Project,
    User,
)
from projects.services.accounts import token_revoke

# /admin/login/ counts failures and locks out exactly as the dashboard's sign-in does: admin.site is
# projects.views.signin.BrainAdminSite (INSTALLED_APPS names projects.admin_config).


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = ("email", "display_name", "is_staff", "is_active", "date_joined", "email_confirmed_at")
    search_fields = ("email", "display_name")
    list_filter = ("is_staff", "is_active")
    fieldsets = (
        (None, {"fields": ("email", "password", "display_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "date_joined", "email_confirmed_at")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)

    def save_model(self, request: HttpRequest, obj: User, form: Any, change: bool) -> None:
        if not change:  # staff vouch for an address they add; only open sign-ups start unconfirmed
            obj.email_confirmed_at = timezone.now()
        super().save_model(request, obj, form, change)


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ("user",)
    extra = 0


@admin.register(Org)
class OrgAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "personal_for", "require_member_review", "created_at")
    list_filter = ("require_member_review",)
    search_fields = ("name", "slug")
    raw_id_fields = ("personal_for",)
    inlines = [MembershipInline]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "org", "framework", "language", "created_at")
    search_fields = ("name", "slug", "org__name")
    list_filter = ("framework", "language")
    raw_id_fields = ("org", "created_by")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "label", "user", "project", "created_at", "last_used_at", "expires_at", "revoked_at")
    search_fields = ("prefix", "label", "user__email")
    list_filter = ("revoked_at",)
    raw_id_fields = ("user", "project")
    readonly_fields = ("prefix", "digest", "last_used_at", "created_at", "revoked_at")
    actions = ("revoke",)

    @admin.action(description="Revoke (the next request with it fails)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        tokens = list(queryset.filter(revoked_at__isnull=True).select_related("user"))
        for token in tokens:
            token_revoke(user=token.user, token_id=token.id)
        messages.success(request, f"{len(tokens)} token(s) revoked.")


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("email", "org", "role", "invited_by", "created_at", "expires_at", "accepted_at", "revoked_at")
    search_fields = ("email", "org__name")
    raw_id_fields = ("org", "invited_by", "accepted_by")
    readonly_fields = ("digest",)


@admin.register(LoginThrottle)
class LoginThrottleAdmin(admin.ModelAdmin):
    """Staff can lift a lockout by deleting its row."""

    list_display = ("key", "failures", "window_started_at", "locked_until")
    search_fields = ("key",)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "org", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__email", "org__name")
    raw_id_fields = ("user", "org")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Append-only: staff read it, nobody edits or deletes it here."""

    list_display = ("created_at", "action", "actor_email", "org", "target", "summary")
    list_filter = ("action",)
    search_fields = ("actor_email", "target", "summary", "org__name")
    raw_id_fields = ("org", "actor")
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(admin.ModelAdmin):
    """A replayable first answer; rows expire on their own (the hourly purge)."""

    list_display = ("created_at", "user", "holder", "scope", "status")
    search_fields = ("key", "holder", "scope", "user__email")
    raw_id_fields = ("user",)
    exclude = ("body",)  # a replayed answer may carry secrets of the call
