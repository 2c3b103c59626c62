"""Staff admin over knowledge. Actions go through the services; embeddings and search vectors stay hidden."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from brain.errors import BrainError
from knowledge.guard_models import DreamRun, GuardCalibration, GuardDecision, GuardPattern, GuardRuleVersion
from knowledge.models import Contradiction, HealthSnapshot, KnowledgeItem, LlmUsage, PeerCard, Proposal, ScopeRows
from knowledge.services.curate import knowledge_delete, knowledge_restore
from knowledge.services.knowledge_vectors import knowledge_vectors_follow
from knowledge.services.proposals import proposal_approve
from projects.models import User
from projects.scope import Principal

HIDDEN = ("embedding", "embedding_bits", "search_vector")


def _staff(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


@admin.register(KnowledgeItem)
class KnowledgeItemAdmin(admin.ModelAdmin):
    list_display = ("short", "type", "owner", "project", "confidence", "decay_score", "source", "review_status",
                    "deleted_at", "created_at")
    list_filter = ("type", "source", "stage", "review_status", ("deleted_at", admin.EmptyFieldListFilter),
                   ("superseded_by", admin.EmptyFieldListFilter))
    search_fields = ("content", "trigger", "owner__email", "project__name", "=id")
    raw_id_fields = ("owner", "project", "superseded_by")
    exclude = HIDDEN
    # Review decisions belong to the org's owners (dashboard or REST), so staff see them but do not make them here.
    readonly_fields = ("embedding_model", "success_count", "failure_count", "last_used_at", "deleted_at",
                       "review_status", "reviewed_by", "reviewed_at", "review_supersedes")
    list_select_related = ("owner", "project")
    actions = ("soft_delete", "restore")

    @admin.display(description="rule")
    def short(self, obj: KnowledgeItem) -> str:
        return obj.content[:80]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeItem]:
        return super().get_queryset(request).defer(*HIDDEN)

    def save_model(self, request: HttpRequest, obj: KnowledgeItem, form: Any, change: bool) -> None:
        """A row added here, or one whose trigger or rule staff changed, gets a vector of its new text: the one it
        had would keep finding it by what it used to say."""
        text_changed = not change or bool({"content", "trigger"} & set(form.changed_data))
        if text_changed:
            obj.embedding, obj.embedding_model = None, ""
        super().save_model(request, obj, form, change)
        if text_changed:
            knowledge_vectors_follow([obj.pk])

    @admin.action(description="Soft-delete (restorable; leaves retrieval at once)")
    def soft_delete(self, request: HttpRequest, queryset: QuerySet[KnowledgeItem]) -> None:
        for item in queryset.select_related("owner"):
            knowledge_delete(principal=Principal(user=item.owner), item_id=item.id, actor=_staff(request))
        messages.success(request, f"{queryset.count()} row(s) deleted.")

    @admin.action(description="Restore deleted rows")
    def restore(self, request: HttpRequest, queryset: QuerySet[KnowledgeItem]) -> None:
        for item in queryset.select_related("owner"):
            knowledge_restore(principal=Principal(user=item.owner), item_id=item.id, actor=_staff(request))
        messages.success(request, f"{queryset.count()} row(s) restored.")


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    list_display = ("content_short", "kind", "status", "score", "owner", "project", "created_at")
    list_filter = ("status", "kind", "type")
    search_fields = ("content", "owner__email", "=session_id")
    raw_id_fields = ("owner", "project", "target", "applied_item")
    readonly_fields = ("session_id", "target_key", "signals", "decided_at", "applied_item")
    actions = ("approve",)

    @admin.display(description="content")
    def content_short(self, obj: Proposal) -> str:
        return obj.content[:80]

    @admin.action(description="Approve for its owner (applies it)")
    def approve(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        for proposal in queryset.select_related("owner"):
            try:
                proposal_approve(user=proposal.owner, proposal_id=proposal.id)
            except BrainError as exc:
                messages.error(request, exc.message)


@admin.register(Contradiction)
class ContradictionAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "project", "similarity", "reason", "detected_on", "resolved_at")
    list_filter = ("reason", ("resolved_at", admin.EmptyFieldListFilter))
    search_fields = ("owner__email", "first__content", "second__content")
    raw_id_fields = ("owner", "project", "first", "second")


@admin.register(HealthSnapshot)
class HealthSnapshotAdmin(admin.ModelAdmin):
    list_display = ("as_of", "owner", "project", "active", "used_last_30_days", "average_confidence", "contradictions")
    list_filter = ("as_of",)
    search_fields = ("owner__email", "project__name")
    raw_id_fields = ("owner", "project")


@admin.register(PeerCard)
class PeerCardAdmin(admin.ModelAdmin):
    list_display = ("user", "updated_at")
    search_fields = ("user__email",)
    raw_id_fields = ("user",)


@admin.register(LlmUsage)
class LlmUsageAdmin(admin.ModelAdmin):
    list_display = ("user", "day", "count")
    list_filter = ("day",)
    search_fields = ("user__email",)
    raw_id_fields = ("user",)


@admin.register(GuardPattern)
class GuardPatternAdmin(admin.ModelAdmin):
    """The deterministic half of a guard rule; the rule text itself is its knowledge item."""

    list_display = ("pattern", "kind", "severity", "knowledge", "created_at")
    list_filter = ("kind", "severity")
    search_fields = ("pattern", "alternative")
    # The pattern is also its rule's trigger (what search finds it by): changing it here would leave the two apart.
    # A new pattern is a new rule; severity and the alternative stay editable.
    readonly_fields = ("knowledge", "kind", "pattern")

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Its form could set neither the rule nor the pattern (saving it failed on the missing rule). A rule is added
        # with its text and pattern together by `guard_rule_add`, which also refuses a pattern the guard cannot run.
        return False


@admin.register(GuardDecision)
class GuardDecisionAdmin(admin.ModelAdmin):
    """What the guard answered: a record, so staff read it and never edit it."""

    list_display = ("created_at", "allowed", "owner", "project", "short")
    list_filter = ("allowed",)
    search_fields = ("action", "owner__email")
    raw_id_fields = ("owner", "project")
    list_select_related = ("owner", "project")

    @admin.display(description="action")
    def short(self, obj: GuardDecision) -> str:
        return obj.action[:80]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(DreamRun)
class DreamRunAdmin(admin.ModelAdmin):
    list_display = ("created_at", "scope", "reason", "owner", "evolved_at", "decayed_at", "crossed_at",
                    "abandoned_at")
    search_fields = ("scope", "owner__email")
    raw_id_fields = ("owner",)


class TriggerKeptAdmin(admin.ModelAdmin):
    """Rows written by database triggers only: read-only here."""

    search_fields = ("scope",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(GuardRuleVersion)
class GuardRuleVersionAdmin(TriggerKeptAdmin):
    """The guard cache's invalidation."""

    list_display = ("scope", "version")


@admin.register(ScopeRows)
class ScopeRowsAdmin(TriggerKeptAdmin):
    """Each scope's retrievable rows, as searches read them (the nightly `knowledge-scope-rows` task corrects them)."""

    list_display = ("scope", "rows")


@admin.register(GuardCalibration)
class GuardCalibrationAdmin(admin.ModelAdmin):
    """Written by `brain guard calibrate`; the newest row per embedding model is the guard's threshold."""

    list_display = ("created_at", "embedding_model", "threshold", "source", "true_positive_rate",
                    "false_positive_rate", "matches", "non_matches")
    list_filter = ("embedding_model",)
