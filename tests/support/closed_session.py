"""Builds closed sessions with events through the session services (the close itself is the tools issue's)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from projects.models import Project, User
from sessions.models import Session
from sessions.services.events import EventDraft, session_events_log_many, session_start


def closed_session(
    *, user: User, project: Project, prompt: str = "add a login form", events: list[tuple[str, str, dict[str, Any]]]
    | None = None, ended_at: datetime | None = None, framework: str = "django", outcome: dict[str, Any] | None = None,
) -> Session:
    ended = ended_at or timezone.now()
    session = session_start(user=user, project=project, prompt=prompt, framework=framework,
                            started_at=ended - timedelta(minutes=30))
    drafts = [EventDraft(kind, content, payload, ended - timedelta(minutes=20 - i))
              for i, (kind, content, payload) in enumerate(events or [])]
    if drafts:
        session_events_log_many(session=session, drafts=drafts)
    Session.objects.filter(id=session.id).update(ended_at=ended, success=True, outcome=outcome or {})
    session.refresh_from_db()
    return session
