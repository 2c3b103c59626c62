"""Mid-task retrieval: the knowledge bundle and its injection text, recorded on the session when given."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from brain.errors import ValidationFailed
from brain.text import text_storable
from knowledge.injection import build_injection
from knowledge.selectors.search import knowledge_search
from projects.scope import Principal
from projects.selectors.addressed import project_addressed
from sessions.models import ApplicationRole
from sessions.selectors.owned import session_owned
from sessions.services.open import applications_record, as_injectable

MAX_LIMIT = 20


def knowledge_retrieve(
    *, principal: Principal, prompt: str, session_id: str | None = None, project_id: str | None = None,
    framework: str = "", language: str = "", limit: int = 5, budget_tokens: int | None = None,
) -> dict[str, Any]:
    """Typed items (ids, scores, why) plus the injection text within the budget; with a sessionId the
    search runs in that session's project and the injected rows are recorded on it."""
    text_storable(prompt=prompt, sessionId=session_id, projectId=project_id, framework=framework, language=language)
    if not prompt.strip():
        raise ValidationFailed("prompt must not be empty: pass the task you are about to work on")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be between 1 and {MAX_LIMIT}")
    with transaction.atomic():
        session = session_owned(principal=principal, session_id=session_id) if session_id else None
        scope_project = session.project_id if session else None
        if session is None and project_id is not None:
            scope_project = project_addressed(principal=principal, project_id=project_id).project.id
        found = knowledge_search(principal=principal, query=prompt, limit=limit, project_id=scope_project,
                                 framework=framework, language=language, explain=True)
        budget = budget_tokens or int(settings.BRAIN_RETRIEVAL["budget_tokens"])
        injection = build_injection(as_injectable(found.hits), budget=budget)
        if session is not None:
            applications_record(session=session, knowledge_ids=injection.ids, role=ApplicationRole.INJECTED)
    items = [
        {"id": str(h.id), "type": h.type, "trigger": h.trigger, "rule": h.content, "rationale": h.rationale,
         "confidence": h.confidence, "tags": h.tags, "projectId": str(h.project_id) if h.project_id else None,
         "score": h.score, "why": h.explain}
        for h in found.hits
    ]
    bundle = {"items": items, "injectedIds": list(injection.ids),
              "retrieval": found.retrieval, "notice": found.notice or None}
    return {"bundle": bundle, "injection": injection.text}
