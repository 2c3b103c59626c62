"""`brain bench retrieval --dump PATH`: every question's two ranked lists and the engine's hybrid ranking, one
JSON line per question, so a fusion can be tried offline over exactly the lists the engine fused.

`replay_hybrid` is the kept session fusion (per-query shares from score shape, weighted reciprocal rank, events
scored against `rrf_max`, sessions by a decayed sum) written in Python over a dumped line. A replay is only worth
trusting if it reproduces the engine's own order, so the bench test checks it does; every fusion tried in issue 16
(docs/benchmarks.md) was judged this way, by scripts each try rewrote.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

# Django models load only after setup, and the CLI imports every bench module to build its parser: the engine is
# imported inside the functions.
Key = tuple[str, int]


def dump_line(principal: Any, project: Any, question: dict[str, Any], keys: dict[Any, Key],
              hybrid: Any, evidence: tuple[set[Key], set[str]]) -> dict[str, Any]:
    """One question: its evidence, the full-text and vector lists (rank and raw score: BM25, cosine similarity)
    as the selector builds them, and the engine's hybrid events and sessions in their order. A row's `turn` is
    its (session key, turn number) in the dataset, its `session` the stored session's id."""
    from knowledge.search import hybrid_candidates
    from sessions.selectors.search import EVENT_ORDER, EVENT_TABLE, event_fusion, session_event_scope

    scope = session_event_scope(principal=principal, project_id=project.id)
    # The selector's own fusion (long-row penalties included): a dump of other lists would not replay the engine.
    fusion = event_fusion()
    lists: dict[str, list[dict[str, Any]]] = {}
    for mode in ("fts", "vector"):
        found = hybrid_candidates(table=EVENT_TABLE, columns="t.session_id, length(t.search_vector) AS lex",
                                  scope=scope, query=question["question"], mode=mode, fusion=fusion, order=EVENT_ORDER)
        lists[mode] = [{
            "id": str(c.id), "turn": list(keys[c.id]), "session": str(c.row["session_id"]), "lex": c.row["lex"],
            "rank": c.fts_rank if mode == "fts" else c.vec_rank,
            "score": c.fts_score if mode == "fts" else 1 - float(c.vec_distance or 0.0),
        } for c in found.candidates]
    turns, sessions = evidence
    return {
        "question": question["question"], "question_type": question["question_type"],
        "evidence_turns": sorted([list(t) for t in turns]), "evidence_sessions": sorted(sessions),
        "fts": lists["fts"], "vector": lists["vector"],
        "fusion": {"rrf_k": fusion.rrf_k, "rrf_k_vector": fusion.rrf_k_vector,
                   "weight_vector": fusion.weight_vector, "weight_fts": fusion.weight_fts,
                   "candidates": fusion.candidates, "neighbours": fusion.neighbours,
                   "neighbours_far": fusion.neighbours_far, "neighbour_lexemes": fusion.neighbour_lexemes},
        "hybrid_turns": [list(keys[e.id]) for e in hybrid.events],
        "hybrid_sessions": [keys[s.session_id][0] for s in hybrid.sessions],
    }


def head_distance(scores: list[float]) -> float:
    """`knowledge.search._confidence` in Python: the mean of the first SHAPE_HEAD scores in standard deviations
    above the mean of all (0 for fewer than 3 rows or a flat list)."""
    from knowledge.search import SHAPE_HEAD

    if len(scores) < 3:
        return 0.0
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if sd <= 0:
        return 0.0
    head = scores[:SHAPE_HEAD]
    return max((sum(head) / len(head) - mean) / sd, 0.0)


def replay_hybrid(line: dict[str, Any]) -> tuple[list[Key], list[str]]:
    """The engine's hybrid events (turn keys, best first) and sessions for one dumped line, fused in Python."""
    from knowledge.search import SHAPE_FLOOR, SHAPE_FTS_FULL, SHAPE_POWER, Fusion, fused_max
    from knowledge.search_neighbours import neighbour_gain
    from sessions.selectors.search import SESSION_EVENT_DECAY

    fusion = Fusion(**line["fusion"])
    cv = head_distance([r["score"] for r in line["vector"]]) ** SHAPE_POWER
    fts_scores = [r["score"] for r in line["fts"]]
    cf = head_distance(fts_scores) ** SHAPE_POWER * min(max(fts_scores, default=0.0) / SHAPE_FTS_FULL, 1.0)
    share = min(max(2 * cv / (cv + cf), SHAPE_FLOOR), 2 - SHAPE_FLOOR) if cv + cf > 0 else 1.0
    weights = {"vector": share * fusion.weight_vector, "fts": (2 - share) * fusion.weight_fts}
    ks = {"vector": fusion.rrf_k_vector or fusion.rrf_k, "fts": fusion.rrf_k}
    rows: dict[str, dict[str, Any]] = {}
    for name in ("vector", "fts"):
        for r in line[name]:
            row = rows.setdefault(r["id"], {"turn": tuple(r["turn"]), "session": r["session"], "rrf": 0.0,
                                            "session_key": r["turn"][0], "lex": r.get("lex", 0)})
            row["rrf"] += weights[name] / (ks[name] + r["rank"])
    _with_neighbours(rows, {1: fusion.neighbours, 2: fusion.neighbours_far}, fusion.neighbour_lexemes)
    rrf_max = fused_max(fusion.weight_vector, fusion.weight_fts, fusion, adaptive=True) * neighbour_gain(
        fusion.neighbours, fusion.neighbours_far)
    order = sorted(rows, key=lambda i: (-rows[i]["rrf"], uuid.UUID(i)))[: fusion.candidates]
    events = sorted(((round(rows[i]["rrf"] / rrf_max, 6), i) for i in order), key=lambda e: -e[0])
    # Grouped by the stored session (a dataset may repeat a session id inside one haystack), named by its key.
    grouped: dict[str, tuple[str, list[float]]] = {}
    for score, i in events:
        grouped.setdefault(rows[i]["session"], (rows[i]["session_key"], []))[1].append(score)
    sessions = sorted(((round(sum(s * SESSION_EVENT_DECAY**n for n, s in enumerate(g)), 6), key)
                       for key, g in grouped.values()), key=lambda s: -s[0])
    return [rows[i]["turn"] for _, i in events], [sid for _, sid in sessions]


def _with_neighbours(rows: dict[str, dict[str, Any]], shares: dict[int, float], lexemes: int) -> None:
    """`knowledge.search_neighbours.fused_neighbour_ctes` in Python: each short row's fused score plus a share of
    the short found rows at each distance in its stored session (`shares`: distance -> share; a bench turn's
    number is its position), all read from the scores before any is added to."""
    if not any(shares.values()):
        return
    placed = {(r["session"], r["turn"][1]): r["rrf"] for r in rows.values() if r["lex"] <= lexemes}
    for r in rows.values():
        if r["lex"] <= lexemes:
            r["rrf"] += sum(share * sum(placed.get((r["session"], r["turn"][1] + d), 0.0) for d in (-far, far))
                            for far, share in shares.items() if share)
