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
              hybrid: Any, evidence: tuple[set[Key], set[str]], depth: int = 0) -> dict[str, Any]:
    """One question: its evidence, the full-text and vector lists (rank and raw score: BM25, cosine similarity)
    as the selector builds them, and the engine's hybrid events and sessions in their order. A row's `turn` is
    its (session key, turn number) in the dataset, its `session` the stored session's id.

    `depth` above the fusion's candidates dumps each list that deep (every row of a small haystack), so a fusion
    may read a row's score in the list it missed; `engine_lists` cuts them back to what the engine fused."""
    from dataclasses import replace

    from knowledge.search import hybrid_candidates
    from sessions.selectors.search import EVENT_ORDER, EVENT_TABLE, event_fusion, session_event_scope

    scope = session_event_scope(principal=principal, project_id=project.id)
    # The selector's own fusion (long-row penalties included): a dump of other lists would not replay the engine.
    fusion = event_fusion()
    deep = replace(fusion, candidates=max(depth, fusion.candidates))
    lists: dict[str, list[dict[str, Any]]] = {}
    standard: dict[str, float] = {}
    for mode in ("fts", "vector"):
        found = hybrid_candidates(table=EVENT_TABLE, columns="t.session_id, length(t.search_vector) AS lex",
                                  scope=scope, query=question["question"], mode=mode, fusion=deep, order=EVENT_ORDER)
        lists[mode] = [{
            "id": str(c.id), "turn": list(keys[c.id]), "session": str(c.row["session_id"]), "lex": c.row["lex"],
            "rank": c.fts_rank if mode == "fts" else c.vec_rank,
            "score": c.fts_score if mode == "fts" else 1 - float(c.vec_distance or 0.0),
        } for c in found.candidates]
        if found.standard is not None:
            standard |= ({"fts_mu": found.standard.fts_mu, "fts_sd": found.standard.fts_sd} if mode == "fts" else
                         {"vector_mu": found.standard.vector_mu, "vector_sd": found.standard.vector_sd})
    _with_cosines(lists["fts"], question["question"])
    turns, sessions = evidence
    return {
        "question": question["question"], "question_type": question["question_type"],
        "evidence_turns": sorted([list(t) for t in turns]), "evidence_sessions": sorted(sessions),
        "fts": lists["fts"], "vector": lists["vector"], "standard": standard,
        "fusion": {"rrf_k": fusion.rrf_k, "rrf_k_vector": fusion.rrf_k_vector,
                   "weight_vector": fusion.weight_vector, "weight_fts": fusion.weight_fts,
                   "candidates": fusion.candidates, "neighbours": fusion.neighbours,
                   "neighbours_far": fusion.neighbours_far, "neighbour_lexemes": fusion.neighbour_lexemes,
                   "vector_long_lexemes": fusion.vector_long_lexemes, "vector_length_b": fusion.vector_length_b,
                   "standard_weight": fusion.standard_weight, "share_floor": fusion.share_floor},
        "hybrid_turns": [list(keys[e.id]) for e in hybrid.events],
        "hybrid_sessions": [keys[s.session_id][0] for s in hybrid.sessions],
    }


def _with_cosines(rows: list[dict[str, Any]], question: str) -> None:
    """Each full-text row's cosine similarity to the question (`cosine`; None without a vector of the model), which
    the standard fusion reads for the rows the vector list did not reach."""
    from django.db import connection

    from knowledge.embeddings import embed_query
    from knowledge.search_vector import vector_literal
    from sessions.selectors.search import EVENT_TABLE

    vector, model = embed_query(question)
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id::text, 1 - (embedding <=> %s::vector) FROM {EVENT_TABLE} "
                       "WHERE id = ANY(%s::uuid[]) AND embedding IS NOT NULL AND embedding_model = %s",
                       [literal, [r["id"] for r in rows], model])
        cosines = dict(cursor.fetchall())
    for r in rows:
        r["cosine"] = cosines.get(r["id"])


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
    from knowledge.search import Fusion, fused_max
    from knowledge.search_neighbours import neighbour_gain
    from sessions.selectors.search import SESSION_EVENT_DECAY

    fusion = Fusion(**line["fusion"])
    lists = engine_lists(line)
    standard = standard_scores(line, lists) if fusion.standard_weight > 0 else {"vector": {}, "fts": {}}
    share = list_share(lists, fusion, standard)
    weights = {"vector": share * fusion.weight_vector, "fts": (2 - share) * fusion.weight_fts}
    ks = {"vector": fusion.rrf_k_vector or fusion.rrf_k, "fts": fusion.rrf_k}
    rows: dict[str, dict[str, Any]] = {}
    for name in ("vector", "fts"):
        for r in lists[name]:
            rows.setdefault(r["id"], {"turn": tuple(r["turn"]), "session": r["session"], "session_key": r["turn"][0],
                                      "lex": r.get("lex", 0), "terms": {"vector": 0.0, "fts": 0.0}})
            rows[r["id"]]["terms"][name] = 1 / (ks[name] + r["rank"])
    for i, row in rows.items():  # the standard fusion's per-list sums, in its order of operations
        row["rrf"] = sum(weights[name] * (row["terms"][name]
                                          + fusion.standard_weight * max(standard[name].get(i, 0.0), 0.0))
                         for name in ("vector", "fts"))
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


def standard_scores(line: dict[str, Any], lists: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """`knowledge.search_standard` in Python: each row's standard score in each list, by id. The vector one also
    for the full-text rows the vector list did not reach (from their `cosine`); 0 over a list without spread."""
    stats = line["standard"]

    def vector_z(similarity: float, lex: int) -> float:
        return (_penalised(line["fusion"], similarity, lex) - stats["vector_mu"]) / stats["vector_sd"] \
            if stats["vector_sd"] else 0.0

    vector = {r["id"]: vector_z(r["score"], r["lex"]) for r in lists["vector"]}
    vector |= {r["id"]: vector_z(r["cosine"], r["lex"]) for r in lists["fts"]
               if r["id"] not in vector and r.get("cosine") is not None}
    fts = {r["id"]: (r["score"] - stats["fts_mu"]) / stats["fts_sd"] if stats["fts_sd"] else 0.0
           for r in lists["fts"]}
    return {"vector": vector, "fts": fts}


def list_share(lists: dict[str, list[dict[str, Any]]], fusion: Any, standard: dict[str, dict[str, float]]) -> float:
    """The vector list's share of 2 for this query (`knowledge.search._weights_cte`, or the standard fusion's
    `conf` and `shares` when `standard_weight` is set)."""
    from knowledge.search import SHAPE_FTS_FULL, SHAPE_HEAD, SHAPE_POWER

    fts_scores = [r["score"] for r in lists["fts"]]
    full = min(max(fts_scores, default=0.0) / SHAPE_FTS_FULL, 1.0)
    if fusion.standard_weight > 0:
        heads = {name: [standard[name][r["id"]] for r in lists[name][:SHAPE_HEAD]] for name in ("vector", "fts")}
        cv, cf = (max(sum(h) / len(h), 0.0) if h else 0.0 for h in (heads["vector"], heads["fts"]))
        cf *= full
    else:
        cv = head_distance([r["score"] for r in lists["vector"]]) ** SHAPE_POWER
        cf = head_distance(fts_scores) ** SHAPE_POWER * full
    floor = fusion.share_floor
    return min(max(2 * cv / (cv + cf), floor), 2 - floor) if cv + cf > 0 else 1.0


def engine_lists(line: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The two lists as the engine fused them from a line dumped at any depth: the full-text list's first
    `candidates` rows, and the vector list's `candidates` nearest rows ranked again by similarity with long rows
    penalised (`knowledge.search_vector.vec_cte`)."""
    n = line["fusion"]["candidates"]
    if len(line["vector"]) <= n:
        return {"vector": line["vector"], "fts": line["fts"][:n]}
    nearest = sorted(line["vector"], key=lambda r: -r["score"])[:n]
    ranked = sorted(nearest, key=lambda r: (-_penalised(line["fusion"], r["score"], r["lex"]), uuid.UUID(r["id"])))
    return {"vector": [{**r, "rank": i} for i, r in enumerate(ranked, 1)], "fts": line["fts"][:n]}


def _penalised(fusion: dict[str, Any], similarity: float, lex: int) -> float:
    """A cosine similarity with long rows penalised as the vector list ranks it (`knowledge.search_vector.vec_cte`)."""
    long_lexemes, b = fusion.get("vector_long_lexemes", 0), fusion.get("vector_length_b", 0.0)
    if not long_lexemes:
        return float(similarity)
    return float(similarity) / (1 + b * max(max(lex, 1) / long_lexemes - 1, 0))


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
