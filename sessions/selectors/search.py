"""Session search: the engine (events ranked by the hybrid engine, grouped into sessions) and the
validated lookup tools and pages call, always the caller's own sessions inside visible projects (in SQL)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from brain.errors import ValidationFailed
from brain.text import text_storable
from knowledge.scoring import Context, Weights, rescore_candidates
from knowledge.search import FTS_POSTINGS_BUDGET, MAX_COSINE_DISTANCE, Fusion, Mode, Scope, hybrid_candidates
from knowledge.search_neighbours import RowOrder
from knowledge.search_scope import FTS_SCAN_CAP
from knowledge.selectors.search import fusion_from_settings
from projects.scope import Principal
from projects.selectors.accounts import project_visible, visible_project_ids
from sessions.models import Session
from sessions.selectors.owned import sessions_owned

EVENT_TABLE = "agent_sessions_sessionevent"
_COLUMNS = "t.id, t.session_id, t.project_id, t.event_type, t.content, t.occurred_at, t.created_at"
SNIPPET_CHARS = 240
# A session's n-th best event adds DECAY**n of its score (measured on LongMemEval dev120, docs/benchmarks.md).
SESSION_EVENT_DECAY = 0.5
# Session search's own fusion: no distance cut and per-query list shares, always; the long-row penalty on cosine
# and on BM25 (knowledge/search.py, VECTOR_LONG_LEXEMES, FTS_LONG_LEXEMES) unless the environment sets it
# (`BRAIN_RETRIEVAL_VECTOR_*`, `BRAIN_RETRIEVAL_FTS_*`). One length, one strength for both lists: rows over 48
# distinct lexemes are a long reply's survey of its topic to either list (docs/benchmarks.md, sixth step).
EVENT_FUSION: dict[str, Any] = {"max_distance": MAX_COSINE_DISTANCE, "adaptive": True}
EVENT_LENGTH_PENALTY: dict[str, Any] = {"vector_long_lexemes": 48, "vector_length_b": 0.5,
                                        "fts_long_lexemes": 48, "fts_length_b": 0.5}
# Reciprocal-rank constant of session search, unless the environment sets it (`BRAIN_RETRIEVAL_RRF_K*`): one steep
# curve (k 1) for both lists, so a first place counts and neither list is favoured before the query's shares
# speak. A steeper vector curve (k 1 against 4) suited sets where the vector list leads and sank hybrid below the
# full-text list where that one leads (FriendsQA, authored questions about short chat); k 1 for both was within
# a few questions of the better list on all five sets (docs/benchmarks.md, issue 16, tenth step).
EVENT_RANK_CONSTANTS: dict[str, Any] = {"rrf_k": 1, "rrf_k_vector": 0}
# A turn's BM25 counts half of each neighbouring turn's words and length, and its fused score a quarter of each
# found neighbour's and a fifth of each found turn two places away, unless the environment sets them
# (`BRAIN_RETRIEVAL_FTS_NEIGHBOURS`, `_NEIGHBOURS`, `_NEIGHBOURS_FAR`): short chat turns answer the turn before them
# or are named by the one after, and an exchange often spans three or four turns (knowledge/search_neighbours.py;
# docs/benchmarks.md, issue 16, eleventh and fourteenth steps).
EVENT_NEIGHBOURS: dict[str, Any] = {"fts_neighbours": 0.5, "neighbours": 0.25, "neighbours_far": 0.2}
# A large project's full-text pool keeps the wider cap and postings budget (knowledge search narrows both for the
# open's latency), and every scope up to EXACT_ROWS is searched exactly, even one that is most of the table.
EVENT_POOL: dict[str, Any] = {"fts_scan_cap": FTS_SCAN_CAP, "fts_postings": FTS_POSTINGS_BUDGET,
                              "walk_share": 0.0}
# Each list's standard scores add a fiftieth of themselves to its reciprocal ranks (a row five standard deviations
# out counts as much as a tenth place), and either list keeps at least 0.45 of its weight, unless the environment
# sets them (`BRAIN_RETRIEVAL_STANDARD_WEIGHT`, `BRAIN_RETRIEVAL_SHARE_FLOOR`): with them hybrid was at or above its
# better list on every figure of the five sets of docs/benchmarks.md and kept turn recall@10 over BM25 + 0.10
# (issue 16, nineteenth step; knowledge/search_standard.py).
EVENT_STANDARD: dict[str, Any] = {"standard_weight": 0.02, "share_floor": 0.45}
EVENT_ORDER = RowOrder(group="session_id", position="position")
# Events carry no confidence or outcomes; only recency may nudge them, and by default it does not.
EVENT_WEIGHTS = Weights(confidence=0.0, success=0.0, recency=0.0, context=0.0, floor=0.0, max_per_type=10**6)


@dataclass
class EventHit:
    id: uuid.UUID
    session_id: uuid.UUID
    event_type: str
    snippet: str
    occurred_at: datetime
    score: float
    explain: dict[str, Any] = field(default_factory=dict)


@dataclass
class SessionHit:
    session_id: uuid.UUID
    project_id: uuid.UUID
    score: float
    started_at: datetime | None
    events: list[EventHit]


@dataclass
class SessionSearchResult:
    sessions: list[SessionHit]
    events: list[EventHit]
    retrieval: str
    notice: str = ""


def event_fusion() -> Fusion:
    defaults = {**EVENT_LENGTH_PENALTY, **EVENT_RANK_CONSTANTS, **EVENT_NEIGHBOURS, **EVENT_POOL, **EVENT_STANDARD}
    unset = {name: value for name, value in defaults.items() if settings.BRAIN_RETRIEVAL.get(name) is None}
    return fusion_from_settings(**EVENT_FUSION, **unset)


def session_event_scope(
    *, principal: Principal, project_id: uuid.UUID | str | None = None,
    since: datetime | None = None, until: datetime | None = None,
) -> Scope:
    """The caller's own events in visible projects (one project when given), optionally in a time window."""
    if project_id is not None:
        project_ids = [project_visible(principal=principal, project_id=project_id).id]
    else:
        project_ids = visible_project_ids(principal=principal)
    sql = "t.user_id = %(scope_user)s AND t.project_id = ANY(%(scope_projects)s::uuid[])"
    params: dict[str, Any] = {"scope_user": principal.user.id, "scope_projects": project_ids}
    if since is not None:
        sql += " AND t.occurred_at >= %(since)s"
        params["since"] = since
    if until is not None:
        sql += " AND t.occurred_at < %(until)s"
        params["until"] = until
    return Scope(sql, params, project_ids=tuple(project_ids))


def session_search(
    *, principal: Principal, query: str, limit: int = 10, project_id: uuid.UUID | str | None = None,
    since: datetime | None = None, until: datetime | None = None, mode: Mode = "hybrid",
    explain: bool = False, fusion: Fusion | None = None,
) -> SessionSearchResult:
    """The caller's sessions ranked by their best-matching events (and prompts), with the matching events."""
    text_storable(query=query)
    scope = session_event_scope(principal=principal, project_id=project_id, since=since, until=until)
    found = hybrid_candidates(
        table=EVENT_TABLE, columns=_COLUMNS, scope=scope, query=query, mode=mode,
        fusion=fusion or event_fusion(), order=EVENT_ORDER,
    )
    events = [
        _event_hit(row, score, terms if explain else {})
        for score, terms, row in rescore_candidates(found, context=Context(), weights=EVENT_WEIGHTS,
                                                    now=timezone.now(), explain=explain)
    ]
    events.sort(key=lambda hit: -hit.score)
    sessions = _sessions_of(events, found.candidates)[:limit]
    return SessionSearchResult(sessions=sessions, events=events, retrieval=found.retrieval, notice=found.notice)


def _event_hit(row: dict[str, Any], score: float, explain: dict[str, Any]) -> EventHit:
    text = " ".join(str(row["content"]).split())
    snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
    return EventHit(id=row["id"], session_id=row["session_id"], event_type=row["event_type"], snippet=snippet,
                    occurred_at=row["occurred_at"], score=round(score, 6), explain=explain)


def _sessions_of(events: list[EventHit], candidates: list[Any]) -> list[SessionHit]:
    """A session scores by its best event plus a geometrically shrinking share of its next ones
    (SESSION_EVENT_DECAY), so a second good match breaks ties without letting many weak turns outrank
    one strong one (a plain sum did that: reciprocal-rank scores are flat)."""
    projects = {c.row["session_id"]: c.row["project_id"] for c in candidates}
    grouped: dict[uuid.UUID, list[EventHit]] = {}
    for hit in events:
        grouped.setdefault(hit.session_id, []).append(hit)
    hits = [
        SessionHit(session_id=sid, project_id=projects[sid], events=group[:3], started_at=None,
                   score=round(sum(h.score * SESSION_EVENT_DECAY**i for i, h in enumerate(group)), 6))
        for sid, group in grouped.items()
    ]
    hits.sort(key=lambda hit: -hit.score)  # stable: equal scores keep the event order
    _attach_start_times(hits)
    return hits


def _attach_start_times(hits: list[SessionHit]) -> None:
    started = dict(Session.objects.filter(id__in=[h.session_id for h in hits]).values_list("id", "started_at"))
    for hit in hits:
        hit.started_at = started.get(hit.session_id)


MAX_LIMIT = 50


@dataclass(frozen=True)
class SessionFound:
    session: Session
    score: float
    events: list[EventHit]


@dataclass(frozen=True)
class SessionsFound:
    sessions: list[SessionFound]
    retrieval: str
    notice: str


def sessions_find(
    *, principal: Principal, query: str, since: datetime | None = None, until: datetime | None = None,
    limit: int = 10,
) -> SessionsFound:
    """Matching sessions, best first, each with its score and matching events."""
    text_storable(query=query)
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
    sessions = [SessionFound(session=details[hit.session_id], score=hit.score, events=hit.events)
                for hit in found.sessions if hit.session_id in details]
    return SessionsFound(sessions=sessions, retrieval=found.retrieval, notice=found.notice)
