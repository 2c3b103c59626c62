from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from projects.models import ApiToken, Invitation, LoginThrottle, Membership, Org, Project, User


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = ("email", "display_name", "is_staff", "is_active", "date_joined")
    search_fields = ("email", "display_name")
    list_filter = ("is_staff", "is_active")
    fieldsets = (
        (None, {"fields": ("email", "password", "display_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ("user",)
    extra = 0


@admin.register(Org)
class OrgAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "personal_for", "created_at")
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
    readonly_fields = ("prefix", "digest", "last_used_at", "created_at")


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
