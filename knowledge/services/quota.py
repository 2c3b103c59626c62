"""The per-user daily LLM quota (`LlmSettings.daily_quota` extractions per UTC day), kept in the database."""

from __future__ import annotations

import uuid
from datetime import date

from django.db.models import F
from django.utils import timezone

from knowledge.llm import llm_settings
from knowledge.models import LlmUsage


def llm_quota_claim(*, user_id: uuid.UUID, day: date | None = None) -> bool:
    """Charges one extraction to the user's day when the quota allows it; False (nothing charged) when spent.

    The row is created if missing, then charged by a conditional UPDATE, so concurrent workers can never
    exceed the quota between them."""
    day = day or timezone.now().date()
    limit = llm_settings().daily_quota
    LlmUsage.objects.get_or_create(user_id=user_id, day=day)
    charged = LlmUsage.objects.filter(user_id=user_id, day=day, count__lt=limit).update(count=F("count") + 1)
    return charged == 1


def llm_quota_used(*, user_id: uuid.UUID, day: date | None = None) -> int:
    """Extractions already charged to the user's day."""
    day = day or timezone.now().date()
    row = LlmUsage.objects.filter(user_id=user_id, day=day).first()
    return row.count if row else 0
