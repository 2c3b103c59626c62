"""Staff admin over agent sessions, their events, knowledge applications and background jobs."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from sessions.models import CrossSessionCursor, Session, SessionEvent, SessionJob, SessionKnowledgeApplication
from sessions.services.requeue import session_extraction_requeue


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "project", "client_type", "started_at", "ended_at", "success", "quality_score")
    list_filter = ("success", "client_type", ("ended_at", admin.EmptyFieldListFilter))
    search_fields = ("prompt", "user__email", "project__name", "=id")
    # Its events and applications repeat its owner and project, and every search scopes by them: a session moved
    # to another user or project here would leave them behind in the tenant it came from.
    readonly_fields = ("user", "project")
    list_select_related = ("user", "project")
    date_hierarchy = "started_at"
    actions = ("requeue_extraction",)

    @admin.action(description="Re-queue extraction (closed sessions)")
    def requeue_extraction(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        reset = sum(session_extraction_requeue(session=s) for s in queryset)
        messages.success(request, f"{reset} extraction job(s) re-queued.")


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ("event_type", "session", "user", "occurred_at")
    list_filter = ("event_type",)
    search_fields = ("content", "user__email", "=session__id")
    raw_id_fields = ("session", "user", "project")
    exclude = ("embedding", "search_vector")

    def get_queryset(self, request: HttpRequest) -> QuerySet[SessionEvent]:
        return super().get_queryset(request).defer("embedding", "search_vector")

    # What an agent logged is its session's record: staff read it, or delete an event (a pasted secret), but do not
    # rewrite it. An edited text kept its old vector, and a changed user or project would move the event out of
    # its session's tenant in every search scoped by those columns.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SessionEvent | None = None) -> bool:
        return False


@admin.register(SessionKnowledgeApplication)
class ApplicationAdmin(admin.ModelAdmin):
    list_display = ("role", "session", "knowledge", "outcome", "created_at")
    list_filter = ("role", "outcome")
    search_fields = ("=session__id", "=knowledge__id")
    raw_id_fields = ("session", "knowledge")


@admin.register(SessionJob)
class SessionJobAdmin(admin.ModelAdmin):
    list_display = ("name", "session", "status", "attempts", "items", "outcome", "finished_at")
    list_filter = ("name", "status")
    search_fields = ("=session__id", "user__email")
    raw_id_fields = ("session", "user")
    readonly_fields = ("claim", "claimed_at", "enqueued_at", "finished_at")


@admin.register(CrossSessionCursor)
class CrossSessionCursorAdmin(admin.ModelAdmin):
    list_display = ("user", "last_ended_at", "last_run_on")
    search_fields = ("user__email",)
    raw_id_fields = ("user",)
