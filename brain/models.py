"""Base models shared by every app."""

from __future__ import annotations

import uuid

from django.db import models


class TimestampedModel(models.Model):
    """A row with a random UUID key and creation/update times."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
