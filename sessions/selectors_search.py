"""Session search for tools and pages: the caller's sessions ranked by their events and prompts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from brain.errors import ValidationFailed
from projects.scope import Principal
from sessions.selectors import session_search
from sessions.selectors_owned import sessions_owned

MAX_LIMIT = 50


def sessions_find(
    *, principal: Principal, query: str, since: datetime | None = None, until: datetime | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    """Matching sessions, best first, each with its dates, prompt, score and matching snippets."""
    if not query.strip():
        raise ValidationFailed("query must not be empty: describe what you worked on")
    if since and until and since >= until:
        raise ValidationFailed("since must be earlier than until")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be between 1 and {MAX_LIMIT}")
    found = session_search(principal=principal, query=query, limit=limit, since=since, until=until)
    details = {
        s.id: s for s in sessions_owned(principal=principal).filter(id__in=[h.session_id for h in found.sessions])
    }
    sessions = []
    for hit in found.sessions:
        s = details.get(hit.session_id)
        if s is None:
            continue
        sessions.append({
            "sessionId": str(s.id), "projectId": str(s.project_id), "prompt": s.prompt[:240],
            "startedAt": s.started_at.isoformat(), "endedAt": s.ended_at.isoformat() if s.ended_at else None,
            "sqs": s.quality_score, "score": hit.score,
            "snippets": [{"eventType": e.event_type, "text": e.snippet, "at": e.occurred_at.isoformat()}
                         for e in hit.events],
        })
    return {"sessions": sessions, "retrieval": found.retrieval, "notice": found.notice or None}
