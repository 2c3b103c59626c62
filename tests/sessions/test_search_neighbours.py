"""Session search reads a turn in its context: the fused score of each short event found by either list gains a
share of the fused scores of the short events found just before and after it in its session, and a smaller share
of those found two places away, computed in SQL over the fused rows. Checked against the same sum done here from
the unsmoothed fusion; long events neither give nor take; knowledge search (no sequences) and the single-list modes
are untouched; another tenant's events, though identical, never join a neighbourhood."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.db.models.functions import Length

from knowledge.search import Fusion, hybrid_candidates
from sessions.models import SessionEvent
from sessions.selectors.search import EVENT_ORDER, EVENT_TABLE, event_fusion, session_event_scope
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

LONG = ("Maya: " + " ".join(f"{w}{i}" for i, w in enumerate(["studio", "gate", "pottery", "lyon", "piano"] * 6)))
CHAT = [
    ["Tom: Did you ever get the studio gate code?", "Maya: Yes, it's 4471", "Tom: Great, see you at the studio",
     "Maya: Bring the pottery glaze"],
    ["Maya: The bakery in Porto opens at seven", LONG, "Tom: The studio gate sticks in the rain",
     "Maya: Haha yes"],
]
QUERY = "what is the studio gate code"


def _log(tenant: Tenant) -> None:
    for turns in CHAT:
        session = session_start(user=tenant.user, project=tenant.project, client_type="chat")
        session_events_log_many(session=session, drafts=[EventDraft("turn", t) for t in turns])


def _fused(tenant: Tenant, fusion: Fusion, mode: str = "hybrid") -> dict[Any, float]:
    found = hybrid_candidates(table=EVENT_TABLE, columns="t.id AS event_id", query=QUERY, mode=mode,  # type: ignore[arg-type]
                              fusion=fusion, order=EVENT_ORDER, scope=session_event_scope(principal=tenant.principal))
    return {c.id: c.rrf for c in found.candidates}


@pytest.mark.parametrize(("near", "far"), [(0.25, 0.2), (0.25, 0.0), (0.0, 0.2)])
def test_each_short_turn_adds_a_share_of_its_found_short_neighbours(tenant_a: Tenant, tenant_b: Tenant,
                                                                    near: float, far: float) -> None:
    _log(tenant_a)
    _log(tenant_b)
    fusion = event_fusion()
    assert (fusion.neighbours, fusion.neighbours_far, fusion.neighbour_lexemes) == (0.25, 0.2, 20)
    fusion = replace(fusion, neighbours=near, neighbours_far=far)
    alone = _fused(tenant_a, replace(fusion, neighbours=0.0, neighbours_far=0.0))
    smoothed = _fused(tenant_a, fusion)
    assert set(smoothed) == set(alone)
    rows = {e.id: e for e in SessionEvent.objects.filter(id__in=alone).annotate(lex=Length("search_vector"))}
    assert all(e.user_id == tenant_a.user.id for e in rows.values())
    place = {(e.session_id, e.position): e.id for e in rows.values() if e.lex <= 20}
    changed, two_away = 0, 0
    for event_id, own in alone.items():
        e = rows[event_id]
        assert e.position is not None
        found = {d: place.get((e.session_id, e.position + d)) for d in (-2, -1, 1, 2)}
        two_away += e.lex <= 20 and (found[-2] or found[2]) is not None
        lent = sum((near if abs(d) == 1 else far) * alone[n] for d, n in found.items() if n is not None)
        expected = own + lent if e.lex <= 20 else own
        assert smoothed[event_id] == pytest.approx(expected), e.content
        changed += expected != own
    assert changed >= 2
    assert two_away >= 1  # the far share is exercised, not only the near one
    long_row = next(e for e in rows.values() if e.content == LONG)
    assert smoothed[long_row.id] == pytest.approx(alone[long_row.id])


def test_single_lists_and_the_ceiling(tenant_a: Tenant) -> None:
    _log(tenant_a)
    fusion = event_fusion()
    for mode in ("fts", "vector"):  # a list alone is reported as it ranks
        unsmoothed = replace(fusion, neighbours=0.0, neighbours_far=0.0)
        assert _fused(tenant_a, fusion, mode) == pytest.approx(_fused(tenant_a, unsmoothed, mode))
    found = hybrid_candidates(table=EVENT_TABLE, columns="t.id AS event_id", query=QUERY, mode="hybrid",
                              fusion=fusion, order=EVENT_ORDER, scope=session_event_scope(principal=tenant_a.principal))
    plain = hybrid_candidates(table=EVENT_TABLE, columns="t.id AS event_id", query=QUERY, mode="hybrid",
                              fusion=replace(fusion, neighbours=0.0, neighbours_far=0.0), order=EVENT_ORDER,
                              scope=session_event_scope(principal=tenant_a.principal))
    # a row first in both lists, beside two such rows and two places from two more
    assert found.rrf_max == pytest.approx(plain.rrf_max * (1 + 2 * 0.25 + 2 * 0.2))
    assert all(c.rrf <= found.rrf_max for c in found.candidates)
