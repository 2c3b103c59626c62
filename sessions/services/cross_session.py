"""Daily cross-session extract: patterns that single sessions are too thin to prove.

For each user with at least 2 sessions closed since the last run, look at their last 20 closed sessions
and keep findings that at least 2 different sessions support, tagged `cross_session` plus one
`session:<id>` tag per source session. The cursor moves in the same transaction as the write."""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime

from brain.logs import log_op
from knowledge.llm import HEURISTIC
from knowledge.nightly import parse_as_of
from knowledge.services.absorb import AbsorbResult, ScopedDraft, knowledge_absorb
from projects.models import Project, User
from sessions.findings import Finding, mine_heuristic, passes_quality
from sessions.models import CrossSessionCursor, Session

logger = logging.getLogger(__name__)

MIN_NEW_SESSIONS = 2
WINDOW = 20
MIN_SUPPORT = 2
SAME_FINDING = 0.6  # word overlap (Jaccard) above which two findings are the same pattern
_WORDS = re.compile(r"[a-z0-9_./+-]+")


@dataclass
class Pattern:
    finding: Finding
    words: set[str]
    sessions: list[uuid.UUID] = field(default_factory=list)


def _similar(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= SAME_FINDING


def patterns(sessions: list[Session]) -> list[Pattern]:
    """Heuristic findings of each session, clustered by wording; those seen in ≥ 2 sessions, best supported first."""
    found: list[Pattern] = []
    for session in sessions:
        for finding in mine_heuristic(session, list(session.events.all())):
            words = set(_WORDS.findall(finding.rule.lower()))
            match = next((p for p in found if p.finding.type == finding.type and _similar(p.words, words)), None)
            if match is None:
                found.append(Pattern(finding, words, [session.id]))
            elif session.id not in match.sessions:
                match.sessions.append(session.id)
    supported = [p for p in found if len(p.sessions) >= MIN_SUPPORT and passes_quality(p.finding)]
    return sorted(supported, key=lambda p: -len(p.sessions))


def _draft(pattern: Pattern, projects: dict[uuid.UUID, Project]) -> ScopedDraft:
    """A pattern seen in one project stays there; seen in two or more projects it has proved itself and
    goes to the owner's scope (project null)."""
    seen_in = {projects[sid].id: projects[sid] for sid in pattern.sessions if sid in projects}
    tags = ("cross_session", *(f"session:{sid}" for sid in pattern.sessions))
    support = len(pattern.sessions)
    finding = replace(pattern.finding, confidence=min(0.95, 0.7 + 0.05 * support),
                      rationale=f"Seen in {support} separate sessions.")
    return (next(iter(seen_in.values())) if len(seen_in) == 1 else None, finding.draft(extra_tags=tags))


class CursorMoved(Exception):
    """Another run for the same user moved the cursor first: this run's rows roll back (they are that run's)."""


def cross_session_run_user(*, user: User, as_of: datetime) -> int | None:
    """Extracts for one user; None (logged as kea.cross.skip) when fewer than 2 sessions closed since last time, or
    when another run for the user finished first. Only patterns that a newly closed session supports count: the
    window's older sessions were mined by earlier runs, and counting them again reinforced the same rows every day."""
    cursor, _ = CrossSessionCursor.objects.get_or_create(user=user)
    # Sessions of projects the user still reaches: after leaving an org, its sessions teach it nothing more.
    closed = Session.objects.filter(user=user, ended_at__isnull=False, ended_at__lte=as_of,
                                    project__org__memberships__user=user)
    new = closed.filter(ended_at__gt=cursor.last_ended_at) if cursor.last_ended_at else closed
    new_ids = set(new.values_list("id", flat=True))
    if len(new_ids) < MIN_NEW_SESSIONS:
        log_op(logger, "kea.cross.skip", userId=str(user.id)[:8], reason="too_few_new_sessions",
               newSessionCount=len(new_ids))
        return None
    window = list(closed.select_related("project").order_by("-ended_at")[:WINDOW])
    projects = {session.id: session.project for session in window}
    drafts = [_draft(p, projects) for p in patterns(window) if new_ids & set(p.sessions)]
    last_ended, seen = window[0].ended_at, cursor.last_ended_at

    def move_cursor(_: AbsorbResult) -> None:
        # Only from where this run read it: two runs at once (the nightly beat and a dream job) both saw the same
        # new sessions, and the second would store or reinforce the same patterns again.
        moved = CrossSessionCursor.objects.filter(id=cursor.id, last_ended_at=seen).update(
            last_ended_at=last_ended, last_run_on=as_of.date())
        if not moved:
            raise CursorMoved

    try:
        result = knowledge_absorb(owner=user, drafts=drafts, before_commit=move_cursor)
    except CursorMoved:
        log_op(logger, "kea.cross.skip", userId=str(user.id)[:8], reason="another_run_finished_first")
        return None
    return len(result.created)


def cross_session_dream(*, owner_id: uuid.UUID, as_of: datetime) -> int:
    """The dream cycle's cross-session job: the extract of the run's owner (the user whose session ended).
    Cross-session work is per user (its cursor is), so it covers the scope's sessions and the owner's others;
    rows it creates; 0 when too few sessions closed since the last extract."""
    return cross_session_run_user(user=User.objects.get(id=owner_id), as_of=as_of) or 0


def cross_session_run_all(*, as_of: str | datetime | None = None) -> int:
    """The daily job over every user with closed sessions; returns how many rows it created."""
    started, instant = time.monotonic(), parse_as_of(as_of)
    user_ids = Session.objects.filter(ended_at__isnull=False).values_list("user_id", flat=True).distinct()
    processed = skipped = total = 0
    for user in User.objects.filter(id__in=list(user_ids)).order_by("id"):
        persisted = cross_session_run_user(user=user, as_of=instant)  # embeds first: no transaction around it
        if persisted is None:
            skipped += 1
        else:
            processed, total = processed + 1, total + persisted
    users = processed + skipped
    # Cross-session patterns are found by wording across sessions; no model call is needed for that.
    log_op(logger, "kea.cross.daily_done", users=users, processed=processed, skipped=skipped, totalPersisted=total,
           model=HEURISTIC)
    log_op(logger, "kea.cross_extract", outcome="ok", users=users, totalPersisted=total,
           durMs=round((time.monotonic() - started) * 1000))
    return total
