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
from knowledge.search import BM25_B, BM25_K1, MAX_COSINE_DISTANCE
from knowledge.selectors.search import fusion_from_settings
from sessions.models import SessionEvent
from sessions.selectors.search import session_search
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


def _bm25_oracle(tenant: Tenant, query: str) -> list[Any]:
    """Okapi BM25 over the stored lexemes of tenant A's events: tf from positions, length in tokens,
    IDF over all of the scope's rows, ties by id."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, (SELECT array_agg(lexeme || ' ' || coalesce(array_length(positions, 1), 1)) "
                       "FROM unnest(search_vector)) FROM agent_sessions_sessionevent WHERE user_id = %s",
                       [tenant.user.id])
        docs = {row_id: Counter({lex: int(n) for lex, n in (item.rsplit(" ", 1) for item in lexemes or [])})
                for row_id, lexemes in cursor.fetchall()}
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [query])
        terms = cursor.fetchone()[0]
    matching = {i: tf for i, tf in docs.items() if any(t in tf for t in terms)}
    average = sum(sum(tf.values()) or 1 for tf in matching.values()) / len(matching)
    df = {t: sum(1 for tf in matching.values() if t in tf) for t in terms}

    def score(tf: Counter[str]) -> float:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * (sum(tf.values()) or 1) / average)
        return sum(math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] * (BM25_K1 + 1) / (tf[t] + norm)
                   for t in terms if t in tf)

    return [i for _, i in sorted(((-round(score(tf), 9), i) for i, tf in matching.items()))][:10]


def test_fts_list_is_the_bm25_order_over_the_scope(chat: None, tenant_a: Tenant) -> None:
    for query in QUERIES:
        assert _ranked(tenant_a, query, "fts")[:10] == _bm25_oracle(tenant_a, query), query
