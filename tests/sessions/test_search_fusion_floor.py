"""Hybrid session search is never below the better of its own two lists on a small deterministic chat.

The corpus mixes questions the full-text list places (a rare name, a number) with paraphrases that share
no word with their evidence, which only the vector list places. With fixed equal shares (`adaptive` off)
this corpus fails the assertion: the full-text list's confident misses (rows matching one common word)
push the vector list's first hit down, and hybrid turn and session recall@1 fall to 0.75 against the
vector list's 0.875. Per-query shares from each list's score shape keep hybrid at or above both lists at
every depth checked, per turn and per session (docs/benchmarks.md, issue 16). Questions name no speaker:
a full-text hit on a speaker's name alone still outranks a paraphrase match (a known limit, see the docs)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from sessions.selectors.search import session_search
from sessions.services.events import EventDraft, session_events_log_many, session_start
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

# Every line is distinct, so no two rows tie on either list (ties would be broken by random ids).
FILLER = ["Maya: Hey! How are you?", "Tom: Haha yes", "Maya: That sounds great!", "Tom: Good night!",
          "Maya: How was your day?", "Tom: Same here, busy week at work.", "Maya: Wow, nice",
          "Tom: Oh no, sorry to hear that.", "Maya: Morning!", "Tom: lol true", "Maya: Talk tomorrow?",
          "Tom: Sure thing.", "Maya: Ugh, Mondays.", "Tom: Coffee first.", "Maya: See you soon!",
          "Tom: Cheers, bye."]
# (evidence turn, question): lexical questions name a rare word of their evidence; semantic ones share none.
FACTS = [
    ("Tom: My brother opened Padaria Sol, a tiny bakery in Porto.", "What is the name of the bakery in Porto?"),
    ("Maya: The gate code for the studio is 4471.", "What is the gate code 4471 for?"),
    ("Tom: Kestrel Ridge trail took us six hours.", "How long was Kestrel Ridge?"),
    ("Maya: I adopted a grey kitten last weekend, she sleeps on my keyboard.", "Who got a new pet animal?"),
    ("Tom: My knee hurts after every run, the physio says rest.", "Is anyone injured?"),
    ("Maya: We finally painted the living room a pale green.", "What colour are the walls now?"),
    ("Tom: The flight to Montreal got cancelled twice.", "Did anyone have trouble travelling?"),
    ("Maya: I passed my driving test this morning!", "Who can drive a car now?"),
]
DEPTHS = (1, 2, 3, 5)


@pytest.fixture
def chat(tenant_a: Tenant, tenant_b: Tenant) -> dict[str, tuple[Any, Any]]:
    """Tenant A: four sessions of filler with two facts each; tenant B: every fact verbatim, which A must
    never see. Returns each question's evidence (event id, session id)."""
    evidence: dict[str, tuple[Any, Any]] = {}
    start = timezone.now() - timedelta(days=10)
    for day in range(4):
        session = session_start(user=tenant_a.user, project=tenant_a.project, client_type="test",
                                started_at=start + timedelta(days=day))
        facts = FACTS[day::4]
        filler = FILLER[day * 4:day * 4 + 4]
        turns = filler[:2] + [fact for fact, _ in facts] + filler[2:]
        events = session_events_log_many(session=session, drafts=[EventDraft("turn", t, {}, timezone.now())
                                                                  for t in turns])
        for fact, question in facts:
            evidence[question] = next((e.id, session.id) for e in events if e.content == fact)
    other = session_start(user=tenant_b.user, project=tenant_b.project, client_type="test", started_at=start)
    session_events_log_many(session=other, drafts=[EventDraft("turn", f, {}, timezone.now()) for f, _ in FACTS])
    return evidence


def _recall(tenant: Tenant, evidence: dict[str, tuple[Any, Any]], mode: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for question, (event_id, session_id) in evidence.items():
        result = session_search(principal=tenant.principal, query=question, mode=mode)  # type: ignore[arg-type]
        events = [e.id for e in result.events]
        sessions = [s.session_id for s in result.sessions]
        for k in DEPTHS:
            found[f"turn@{k}"] = found.get(f"turn@{k}", 0.0) + (event_id in events[:k]) / len(evidence)
            found[f"session@{k}"] = found.get(f"session@{k}", 0.0) + (session_id in sessions[:k]) / len(evidence)
    return found


def test_hybrid_is_never_below_its_best_list(chat: dict[str, tuple[Any, Any]], tenant_a: Tenant,
                                             tenant_b: Tenant) -> None:
    recall = {mode: _recall(tenant_a, chat, mode) for mode in ("hybrid", "fts", "vector")}
    for key in recall["hybrid"]:
        best = max(recall["fts"][key], recall["vector"][key])
        assert recall["hybrid"][key] >= best - 1e-9, (key, recall)
    # Neither list places every question first, so a fusion that follows the wrong list fails above.
    assert recall["fts"]["turn@1"] < 1.0 and recall["vector"]["turn@1"] < 1.0, recall
    # Tenant B holds every fact verbatim, yet A's searches above found A's own rows; B sees only its own.
    seen_by_b = session_search(principal=tenant_b.principal, query=FACTS[0][1]).events
    assert seen_by_b and all(e.session_id not in {sid for _, sid in chat.values()} for e in seen_by_b)
