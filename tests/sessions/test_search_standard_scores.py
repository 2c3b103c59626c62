"""Session search's standard scores (knowledge/search_standard.py), held to an oracle written here: each
list's mean and spread measured over tenant A's whole scope (numpy over the stored vectors, the BM25 oracle of
test_search_exact_oracle), a full-text row the vector list did not reach scored by its own cosine, and the fused
score of every candidate recomputed in Python. Tenant B's near-identical rows must change none of it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from django.db import connection

from knowledge.embeddings import embed_query
from knowledge.search import SHAPE_FTS_FULL, SHAPE_HEAD, CandidateSet, Fusion, hybrid_candidates
from sessions.models import SessionEvent
from sessions.selectors.search import EVENT_ORDER, EVENT_TABLE, event_fusion, session_event_scope
from tests.conftest import Tenant
from tests.sessions.test_search_exact_oracle import QUERIES, _bm25_oracle, chat  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db



def _small(fusion: Fusion) -> Fusion:
    """Lists shorter than tenant A's 36 events, so some full-text rows fall outside the vector list, and a lighter
    vector weight, so such rows reach the fused top; no neighbour terms, which have their own tests
    (test_search_neighbours.py)."""
    return replace(fusion, candidates=5, weight_vector=0.5, neighbours=0.0, neighbours_far=0.0)


def _search(tenant: Tenant, query: str, mode: str, fusion: Fusion) -> CandidateSet:
    return hybrid_candidates(table=EVENT_TABLE, columns="t.id AS event_id", query=query, mode=mode,  # type: ignore[arg-type]
                             fusion=fusion, order=EVENT_ORDER, scope=session_event_scope(principal=tenant.principal))


def _similarities(tenant: Tenant, query: str, fusion: Fusion) -> dict[Any, float]:
    """Every one of the tenant's events: cosine similarity with long rows penalised, as the vector list ranks."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, length(search_vector) FROM {EVENT_TABLE} WHERE user_id = %s",
                       [tenant.user.id])
        lexemes = dict(cursor.fetchall())
    query_vector = np.array(embed_query(query)[0], dtype=np.float64)
    out = {}
    for event_id, vector in SessionEvent.objects.filter(user=tenant.user).values_list("id", "embedding"):
        penalty = 1 + fusion.vector_length_b * max(max(lexemes[event_id], 1) / fusion.vector_long_lexemes - 1, 0)
        out[event_id] = float(np.array(vector, dtype=np.float64) @ query_vector) / penalty
    return out


def _oracle(sims: dict[Any, float], bm25: dict[Any, float], vec: CandidateSet, fts: CandidateSet,
            fusion: Fusion) -> dict[Any, float]:
    """The fused score of every row of either list, from first principles."""
    mu_v, sd_v = float(np.mean(list(sims.values()))), float(np.std(list(sims.values())))
    mu_f, sd_f = float(np.mean(list(bm25.values()))), float(np.std(list(bm25.values())))
    z_v = {i: (s - mu_v) / sd_v if sd_v else 0.0 for i, s in sims.items()}
    z_f = {i: (s - mu_f) / sd_f if sd_f else 0.0 for i, s in bm25.items()}  # one match: no spread
    v_rank = {c.id: c.vec_rank or 0 for c in vec.candidates}
    f_rank = {c.id: c.fts_rank or 0 for c in fts.candidates}
    heads = [c.id for c in sorted(vec.candidates, key=lambda c: c.vec_rank or 0)[:SHAPE_HEAD]]
    cv = max(float(np.mean([z_v[i] for i in heads])), 0.0)
    f_heads = [c.id for c in sorted(fts.candidates, key=lambda c: c.fts_rank or 0)[:SHAPE_HEAD]]
    cf = max(float(np.mean([z_f[i] for i in f_heads])), 0.0) * min(max(bm25.values()) / SHAPE_FTS_FULL, 1.0)
    share = min(max(2 * cv / (cv + cf), fusion.share_floor), 2 - fusion.share_floor) if cv + cf else 1.0
    k = fusion.rrf_k_vector or fusion.rrf_k
    fused = {}
    for i in set(v_rank) | set(f_rank):
        vector_term = (1 / (k + v_rank[i]) if i in v_rank else 0.0) + fusion.standard_weight * max(z_v[i], 0)
        fts_term = 1 / (fusion.rrf_k + f_rank[i]) + fusion.standard_weight * max(z_f[i], 0) if i in f_rank else 0.0
        fused[i] = share * fusion.weight_vector * vector_term + (2 - share) * fusion.weight_fts * fts_term
    return fused


def test_fused_scores_are_the_oracles_over_the_tenants_whole_scope(chat: None, tenant_a: Tenant,  # noqa: F811
                                                                  tenant_b: Tenant) -> None:
    fusion = _small(event_fusion())
    assert fusion.standard_weight > 0 and fusion.adaptive
    completed = 0
    for query in QUERIES:
        sims, bm25 = _similarities(tenant_a, query, fusion), _bm25_oracle(tenant_a, query, share=fusion.fts_neighbours)
        found = _search(tenant_a, query, "hybrid", fusion)
        assert found.standard is not None
        assert found.standard.vector_mu == pytest.approx(np.mean(list(sims.values())), abs=1e-6), query
        assert found.standard.vector_sd == pytest.approx(np.std(list(sims.values())), abs=1e-6), query
        assert found.standard.fts_mu == pytest.approx(np.mean(list(bm25.values())), rel=1e-6), query
        assert found.standard.fts_sd == pytest.approx(np.std(list(bm25.values())), rel=1e-6), query
        vec, fts = _search(tenant_a, query, "vector", fusion), _search(tenant_a, query, "fts", fusion)
        oracle = _oracle(sims, bm25, vec, fts, fusion)
        got = {c.id: c.rrf for c in found.candidates}
        assert got == pytest.approx({i: oracle[i] for i in got}, abs=1e-6), query
        assert sorted(got, key=lambda i: -got[i]) == sorted(got, key=lambda i: -oracle[i]), query
        # Full-text rows past the vector list that stand above the scope's mean similarity: their cosine counted.
        completed += sum(1 for c in found.candidates if c.vec_rank is None and sims[c.id] > found.standard.vector_mu)
    assert completed, "no full-text row outside the vector list was scored by its cosine"


def test_ranks_alone_without_a_standard_weight(chat: None, tenant_a: Tenant) -> None:  # noqa: F811
    """Knowledge search's default, and session search's with BRAIN_RETRIEVAL_STANDARD_WEIGHT=0: reciprocal ranks
    and head-distance shares only, no spread measured."""
    fusion = _small(replace(event_fusion(), standard_weight=0.0))
    found = _search(tenant_a, QUERIES[0], "hybrid", fusion)
    assert found.standard is None
    assert all(c.rrf <= found.rrf_max + 1e-9 for c in found.candidates)
    assert Fusion().standard_weight == 0.0


def test_the_environment_sets_the_weight_and_the_floor(settings: Any) -> None:
    settings.BRAIN_RETRIEVAL = {**settings.BRAIN_RETRIEVAL, "standard_weight": 0.0, "share_floor": 0.3}
    fusion = event_fusion()
    assert (fusion.standard_weight, fusion.share_floor) == (0.0, 0.3)


def test_a_list_alone_keeps_its_own_scores(chat: None, tenant_a: Tenant) -> None:  # noqa: F811
    """`mode="vector"` ranks and scores by the vector list alone (so its sessions, grouped by score, are those of
    the list); the scope's spread is still measured and returned."""
    fusion = _small(event_fusion())
    found = _search(tenant_a, QUERIES[0], "vector", fusion)
    k = fusion.rrf_k_vector or fusion.rrf_k
    assert [c.rrf for c in found.candidates] == pytest.approx(
        [fusion.weight_vector / (k + (c.vec_rank or 0)) for c in found.candidates])
    assert found.standard is not None and found.standard.vector_sd > 0
