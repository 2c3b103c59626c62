"""Mid-task retrieval: the knowledge bundle and its injection text, recorded on the session when given."""

from __future__ import annotations

from django.db import transaction

from brain.errors import ValidationFailed
from brain.text import text_storable
from projects.scope import Principal
from projects.selectors.addressed import project_addressed
from sessions.selectors.owned import session_owned
from sessions.services.open import Retrieved, knowledge_inject

MAX_LIMIT = 20


def knowledge_retrieve(
    *, principal: Principal, prompt: str, session_id: str | None = None, project_id: str | None = None,
    framework: str = "", language: str = "", limit: int = 5, budget_tokens: int | None = None,
) -> Retrieved:
    """Ranked items (with scores and why) plus the injection text within the budget; with a session id the
    search runs in that session's project and the injected rows are recorded on it while it is open."""
    text_storable(prompt=prompt, sessionId=session_id, projectId=project_id, framework=framework, language=language)
    if not prompt.strip():
        raise ValidationFailed("prompt must not be empty: pass the task you are about to work on")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be between 1 and {MAX_LIMIT}")
    with transaction.atomic():
        # Locked while the rows are recorded, so a close cannot credit the session in between; a closed session
        # still scopes the search but records nothing (its credit has run: the rows would never be scored).
        session = session_owned(principal=principal, session_id=session_id, for_update=True) if session_id else None
        scope_project = session.project_id if session else None
        if session is None and project_id is not None:
            scope_project = project_addressed(principal=principal, project_id=project_id).project.id
        recorded_on = session if session is not None and session.ended_at is None else None
        return knowledge_inject(principal=principal, prompt=prompt, project_id=scope_project, session=recorded_on,
                                limit=limit, framework=framework, language=language, budget_tokens=budget_tokens,
                                explain=True)
