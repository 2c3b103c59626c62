"""What nightly jobs fan out over: one scope per project, plus one per owner's project-less rows, and a
fixed `as_of` instant so a rerun of the same night computes the same result."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, time

from django.db.models import Q, QuerySet
from django.utils import timezone

from brain.errors import ValidationFailed
from knowledge.models import KnowledgeItem, KnowledgeType, review_clear


@dataclass(frozen=True)
class NightlyScope:
    project_id: uuid.UUID | None
    owner_id: uuid.UUID | None

    @classmethod
    def parse(cls, key: str) -> NightlyScope:
        kind, _, raw = key.partition(":")
        try:
            value = uuid.UUID(raw)
        except ValueError:
            raise ValidationFailed(f"scope must be project:<uuid> or owner:<uuid>; got {key!r}") from None
        if kind == "project":
            return cls(project_id=value, owner_id=None)
        if kind == "owner":
            return cls(project_id=None, owner_id=value)
        raise ValidationFailed(f"scope must be project:<uuid> or owner:<uuid>; got {key!r}")

    @property
    def key(self) -> str:
        return f"project:{self.project_id}" if self.project_id else f"owner:{self.owner_id}"

    def filter(self) -> Q:
        if self.project_id:
            return Q(project_id=self.project_id)
        return Q(owner_id=self.owner_id, project__isnull=True)

    def items(self) -> QuerySet[KnowledgeItem]:
        """The scope's rows that nightly jobs look at: not deleted, not action items (tasks, not rules)."""
        # Rows held for review stay out of merges, decay and health until an owner approves them.
        return KnowledgeItem.objects.filter(self.filter(), review_clear(), deleted_at__isnull=True).exclude(
            type=KnowledgeType.ACTION_ITEM
        )


def nightly_scopes() -> list[str]:
    """Every scope holding at least one knowledge row."""
    projects = KnowledgeItem.objects.filter(project__isnull=False).values_list("project_id", flat=True).distinct()
    owners = KnowledgeItem.objects.filter(project__isnull=True).values_list("owner_id", flat=True).distinct()
    return [f"project:{p}" for p in projects] + [f"owner:{o}" for o in owners]


def parse_as_of(value: str | datetime | None) -> datetime:
    """The run's instant: given (ISO 8601), or today's midnight UTC, so every task of one night agrees."""
    if value is None:
        return datetime.combine(timezone.now().date(), time(0), tzinfo=UTC)
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationFailed(f"as_of must be an ISO 8601 date or datetime; got {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
