"""Oracles for the two lists of session search: on a small scope, `vector` must return exactly the
nearest events by cosine (numpy over the stored vectors) and `fts` exactly the Okapi BM25 order computed
here in Python from the stored tsvectors, even when another tenant's near-identical rows fill the index.

Before these oracles the vector list lost a third of the true nearest short turns (HNSW walk under the
scope filter plus a length normalisation that lifted one-word turns) and the full-text IDF was measured
inside a candidate pool built from the query's rarer terms (docs/benchmarks.md, issue 16)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from knowledge.embeddings import embed_query
from knowledge.search import MAX_COSINE_DISTANCE, hybrid_candidates
from knowledge.search_fts import BM25_B, BM25_K1
from knowledge.selectors.search import fusion_from_settings
from sessions.models import SessionEvent
from sessions.selectors.search import EVENT_ORDER, EVENT_TABLE, event_fusion, session_event_scope, session_search
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

SPEAKERS = ("Maya", "Tom")
FACTS = ["adopted a grey cat called Pixel", "started pottery classes on Tuesdays", "ran a half marathon in Lyon",
         "moved to a flat near the river", "is learning Portuguese for a trip", "fixed the bike's back wheel",
         "cooked lasagna for the whole family", "got a job offer from a bakery", "lost my keys at the cinema",
         "planted tomatoes on the balcony", "watched the Golden Globes with friends", "bought a second-hand piano"]
FILLER = ["Hey! How are you?", "Haha yes", "That sounds great!", "Good night!", "Oh no, sorry to hear that.",
          "How was your day?", "Same here", "Wow, nice"]
QUERIES = ["What is the name of Maya's cat?", "Where did Tom run a half marathon?", "What did Maya plant?",
           "Which instrument did Tom buy?", "Who offered a job?", "What language is Maya learning?"]


def _log(tenant: Tenant, turns: list[str]) -> None:
    session = session_start(user=tenant.user, project=tenant.project, client_type="test", started_at=timezone.now())
    session_events_log_many(session=session, drafts=[EventDraft("turn", t, {}, timezone.now()) for t in turns])


@pytest.fixture
def chat(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Tenant A: short speaker-prefixed chat; tenant B: the same facts reworded, four times as many rows."""
    for day in range(4):
        turns = [f"{SPEAKERS[n % 2]}: {FILLER[(n + day) % len(FILLER)]}" for n in range(6)]
        turns += [f"{SPEAKERS[(n + day) % 2]}: I {fact}" for n, fact in enumerate(FACTS[day * 3:day * 3 + 3])]
        _log(tenant_a, turns)
    for copy in range(4):
        _log(tenant_b, [f"Tom: my friend {fact} (story {copy})" for fact in FACTS] + [f"Maya: {f}" for f in FILLER])


def _ranked(tenant: Tenant, query: str, mode: str) -> list[Any]:
    found = session_search(principal=tenant.principal, query=query, mode=mode,  # type: ignore[arg-type]
                           fusion=fusion_from_settings(max_distance=MAX_COSINE_DISTANCE))
    return [event.id for event in found.events]


def test_vector_list_is_the_exact_cosine_top_k(chat: None, tenant_a: Tenant) -> None:
    """Compared by similarity, not id: repeated one-liners ("Maya: Haha yes") have identical vectors."""
    rows = list(SessionEvent.objects.filter(user=tenant_a.user).values_list("id", "embedding"))
    matrix = np.array([vector for _, vector in rows], dtype=np.float64)
    for query in QUERIES:
        similarity = dict(zip([i for i, _ in rows], matrix @ np.array(embed_query(query)[0]), strict=True))
        exact = sorted(similarity.values(), reverse=True)[:10]
        found = [similarity[i] for i in _ranked(tenant_a, query, "vector")[:10]]
        assert found == pytest.approx(exact, abs=1e-5), query


def _bm25_oracle(tenant: Tenant, query: str, share: float = 0.0) -> dict[Any, float]:
    """Okapi BM25 over the stored lexemes of tenant A's events: tf from positions, length in tokens, IDF over
    all of the scope's rows. With `share`, a matching row also counts that share of the lexemes and length of
    each matching row just before or after it in its session (knowledge/search_neighbours.py)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, session_id, position, (SELECT array_agg(lexeme || ' ' || "
                       "coalesce(array_length(positions, 1), 1)) FROM unnest(search_vector)) "
                       "FROM agent_sessions_sessionevent WHERE user_id = %s", [tenant.user.id])
        rows = cursor.fetchall()
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [query])
        terms = cursor.fetchone()[0]
    own = {row_id: Counter({lex: int(n) for lex, n in (item.rsplit(" ", 1) for item in lexemes or [])})
           for row_id, _, _, lexemes in rows}
    matching = {i for i, tf in own.items() if any(t in tf for t in terms)}
    place = {(session, position): i for i, session, position, _ in rows if i in matching}
    near = {i: [place[(session, position + d)] for d in (-1, 1) if (session, position + d) in place]
            for i, session, position, _ in rows if i in matching}
    tf = {i: Counter({t: own[i][t] + share * sum(own[j][t] for j in near[i]) for t in terms}) for i in matching}
    length = {i: (sum(own[i].values()) or 1) + share * sum(sum(own[j].values()) or 1 for j in near[i])
              for i in matching}
    average = sum(length.values()) / len(matching)
    df = {t: sum(1 for i in matching if tf[i][t] > 0) for t in terms}

    def score(i: Any) -> float:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length[i] / average)
        return sum(math.log(1 + (len(own) - df[t] + 0.5) / (df[t] + 0.5)) * tf[i][t] * (BM25_K1 + 1)
                   / (tf[i][t] + norm) for t in terms if tf[i][t] > 0)

    return {i: score(i) for i in matching}


def _top(scores: dict[Any, float]) -> list[Any]:
    return [i for _, i in sorted((-round(score, 9), i) for i, score in scores.items())][:10]


def test_fts_list_is_the_bm25_order_over_the_scope(chat: None, tenant_a: Tenant) -> None:
    for query in QUERIES:
        assert _ranked(tenant_a, query, "fts")[:10] == _top(_bm25_oracle(tenant_a, query)), query


def test_fts_list_with_neighbours_is_the_bm25_of_each_turn_in_context(chat: None, tenant_a: Tenant) -> None:
    """Session search's default: half of each neighbouring turn's words and length. Scores, not only the order,
    must match; and they must differ from the turn-alone scores (the neighbours were counted)."""
    fusion = event_fusion()
    assert fusion.fts_neighbours == 0.5
    for query in [*QUERIES, "Maya cat name pottery"]:
        found = hybrid_candidates(table=EVENT_TABLE, columns="t.id AS event_id", query=query, mode="fts",
                                  fusion=fusion, order=EVENT_ORDER,
                                  scope=session_event_scope(principal=tenant_a.principal))
        oracle, alone = _bm25_oracle(tenant_a, query, share=0.5), _bm25_oracle(tenant_a, query)
        got = {c.id: c.fts_score for c in found.candidates}
        assert sorted(got.values(), reverse=True)[:10] == pytest.approx(sorted(oracle.values(), reverse=True)[:10])
        assert all(got[i] == pytest.approx(oracle[i]) for i in got), query
    assert any(oracle[i] != pytest.approx(alone[i]) for i in oracle)
