"""Session search's reciprocal-rank curve: one steep curve (k 1) for both lists, each list's k overridable from
the environment, while knowledge search keeps its own k; and the fused-score ceiling that normalises event
scores follows the curves, also when they differ (docs/benchmarks.md, issue 16, tenth step). A second tenant's
events never reach the first tenant's search."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

from knowledge.search import SHAPE_FLOOR, Fusion, fused_max
from knowledge.selectors.search import fusion_from_settings
from sessions.selectors.search import event_fusion, session_search
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant


def test_session_search_uses_its_own_curve_unless_the_environment_sets_it() -> None:
    fusion = event_fusion()
    assert (fusion.rrf_k_vector, fusion.rrf_k, fusion.adaptive) == (0, 1, True)  # 0: the vector list's k is rrf_k
    assert fusion_from_settings().rrf_k != fusion.rrf_k
    with override_settings(BRAIN_RETRIEVAL={**settings.BRAIN_RETRIEVAL, "rrf_k": 9, "rrf_k_vector": 3}):
        assert (event_fusion().rrf_k_vector, event_fusion().rrf_k) == (3, 9)
    knowledge = fusion_from_settings()
    assert knowledge.rrf_k_vector == 0 and not knowledge.adaptive  # one k for both lists: knowledge search


def test_the_ceiling_is_a_row_first_in_both_lists_at_its_best_share() -> None:
    steep = Fusion(rrf_k=4, rrf_k_vector=1)
    best = (2 - SHAPE_FLOOR) / 2 + SHAPE_FLOOR / 5  # the larger share on the steeper curve
    assert fused_max(1.0, 1.0, steep, adaptive=True) == pytest.approx(best)
    assert fused_max(1.0, 1.0, steep, adaptive=False) == pytest.approx(1 / 2 + 1 / 5)
    same = Fusion(rrf_k=5)
    assert fused_max(1.0, 1.0, same, adaptive=True) == pytest.approx(fused_max(1.0, 1.0, same, adaptive=False))


@pytest.mark.django_db
def test_event_scores_stay_within_the_ceiling_and_the_tenant(tenant_a: Tenant, tenant_b: Tenant) -> None:
    texts = ["Maya: the gate code for the studio is 4471", "Tom: coffee first, then the gate code",
             "Maya: see you at the studio tomorrow", "Tom: the bakery in Porto opens at seven"]
    for tenant in (tenant_a, tenant_b):
        session = session_start(user=tenant.user, project=tenant.project, client_type="chat")
        session_events_log_many(session=session, drafts=[EventDraft("turn", t, {}) for t in texts])
    found = session_search(principal=tenant_a.principal, query="studio gate code 4471", limit=4,
                           project_id=tenant_a.project.id, mode="hybrid")
    assert found.events and found.events[0].snippet == texts[0]
    assert all(0 < e.score <= 1.0 for e in found.events)
    assert {e.session_id for e in found.events} <= set(
        tenant_a.user.agent_sessions.values_list("id", flat=True))  # tenant B's copies never come back
