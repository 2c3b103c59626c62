"""BM25's row length is stored (`search_tokens`, migrations knowledge 0015 / sessions 0006): it must be the row's
token count, the positions of its tsvector summed, for the weighted knowledge vector and for events alike, and the
full-text list must score with it exactly as Okapi BM25 computed here in Python does."""

from __future__ import annotations

import math
import uuid

import pytest
from django.db import connection
from django.utils import timezone

from knowledge.search import Fusion, hybrid_candidates
from knowledge.search_fts import BM25_B, BM25_K1
from knowledge.selectors.search import KNOWLEDGE_TABLE, knowledge_scope
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

# Same query-term counts, opposite orders by length in tokens and in distinct lexemes: the first row has 8 tokens
# of 3 lexemes, the second 7 tokens of 7 lexemes. BM25 by tokens puts the second first.
ROWS = [
    ("", "cache invalidation zeta zeta zeta zeta zeta zeta", ""),
    ("", "cache invalidation alpha beta gamma delta epsilon", ""),
    ("when a cache goes stale", "purge the cache, then warm the cache again", "stale caches served old prices"),
    ("", "rotate the logs nightly", "disks filled up twice"),
]


def _teach(tenant: Tenant) -> None:
    knowledge_create_many(owner=tenant.user, project=tenant.project, drafts=[
        KnowledgeDraft(trigger=t, content=c, rationale=r) for t, c, r in ROWS])


def _positions_summed(table: str, owner_column: str, owner: uuid.UUID) -> list[tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT search_tokens, (SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0) "
                       f"FROM unnest(search_vector)) FROM {table} WHERE {owner_column} = %s", [owner])
        return [(int(stored), int(counted)) for stored, counted in cursor.fetchall()]


def test_the_stored_length_is_the_token_count(tenant_a: Tenant, tenant_b: Tenant) -> None:
    _teach(tenant_a)
    session = session_start(user=tenant_b.user, project=tenant_b.project, client_type="test", started_at=timezone.now())
    session_events_log_many(session=session, drafts=[
        EventDraft("note", f"{t} {c} {r}", {}, timezone.now()) for t, c, r in ROWS] + [
        EventDraft("note", "", {}, timezone.now())])
    knowledge = _positions_summed(KNOWLEDGE_TABLE, "owner_id", tenant_a.user.id)
    events = _positions_summed("agent_sessions_sessionevent", "user_id", tenant_b.user.id)
    assert len(knowledge) == 4 and all(stored == counted for stored, counted in knowledge)
    assert len(events) == 5 and all(stored == counted for stored, counted in events)
    assert (8, 8) in knowledge and (0, 0) in events  # 8 tokens of 3 lexemes; an empty event counts 0
    assert _positions_summed(KNOWLEDGE_TABLE, "owner_id", tenant_b.user.id) == []


def _bm25(rows: list[list[str]], terms: list[str], scope_n: int) -> list[float]:
    """Okapi BM25 of each row (its lexemes, repeated per occurrence) over `terms`, IDF over `scope_n` rows."""
    matching = [row for row in rows if any(t in row for t in terms)]
    average = sum(len(row) for row in matching) / len(matching)
    df = {t: sum(1 for row in matching if t in row) for t in terms}
    scores = []
    for row in matching:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(row) / average)
        scores.append(sum(math.log(1 + (scope_n - df[t] + 0.5) / (df[t] + 0.5)) * row.count(t) * (BM25_K1 + 1)
                          / (row.count(t) + norm) for t in terms if t in row))
    return sorted(scores, reverse=True)


def test_full_text_scores_use_the_token_length(tenant_a: Tenant, tenant_b: Tenant) -> None:
    for tenant in (tenant_a, tenant_b):
        _teach(tenant)
    found = hybrid_candidates(table=KNOWLEDGE_TABLE, columns="t.content", query="cache invalidation", mode="fts",
                              scope=knowledge_scope(principal=tenant_a.principal), fusion=Fusion())
    contents = [cand.row["content"] for cand in found.candidates]
    assert contents[:2] == [ROWS[1][1], ROWS[0][1]] and len(contents) == 3
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT (SELECT array_agg(u.lexeme) FROM unnest(search_vector) u, unnest(u.positions) p) "
                       f"FROM {KNOWLEDGE_TABLE} WHERE owner_id = %s", [tenant_a.user.id])
        rows = [list(lexemes) for (lexemes,) in cursor.fetchall()]
    expected = _bm25(rows, ["cach", "invalid"], scope_n=len(rows))
    assert [float(cand.fts_score or 0) for cand in found.candidates] == pytest.approx(expected, rel=1e-9)
