"""`brain bench retrieval-scale`: knowledge-search latency and index build time as the table grows.

Items are generated from real rule files (`awesome_cursorrules.jsonl`, split into rules). Each distinct
rule is embedded once with the configured embedder; an item's vector is its rule's vector plus small
Gaussian noise (re-normalised, cosine ≈ 0.97 to the original), so a million rows need no million model
calls yet the HNSW graph holds no exact duplicates. Rows are loaded with COPY into the real table with
the indexes dropped, the HNSW and GIN indexes are then built (timed), and queries (real rules cut to a
question-sized prefix, embedded at query time) run through `knowledge_search`, the selector behind
`brain_retrieve_knowledge`. Bench rows and their user are removed at the end; the indexes are rebuilt
as the migration defines them whatever happens.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from brain.bench.bench_users import bench_user
from brain.bench.lme import percentile

HELP = "measure knowledge-search latency and index build time at growing table sizes"
# Beside a checkout (../shared/data); an installed wheel has no default and is told what to pass.
DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "awesome_cursorrules.jsonl"
CORPUS_HINT = ("the rule-set corpus awesome_cursorrules.jsonl (CC0 1.0; one JSON object a line with "
               "`rule_set` and `text`), found by default at ../shared/data beside a checkout")
TYPES = ["rule", "reflex", "heuristic", "principle", "recipe", "decision", "anti_principle"]
BASELINE_POSTINGS = 10**12
# The search indexes a load drops and builds back afterwards (`declared_index_sql`).
HNSW_INDEX, GIN_INDEX = "knowledge_embedding_hnsw", "knowledge_search_gin"
# What a knowledge search reads: the table and its two search indexes (`cache_warm`).
CACHED = ("knowledge_knowledgeitem", HNSW_INDEX, GIN_INDEX)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--items", default="10000,100000", help="comma-separated sizes, e.g. 10000,100000,1000000")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="awesome_cursorrules.jsonl")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per size")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rules", type=int, default=3000, help="distinct rules embedded (the text pool)")


def declared_index_sql(name: str) -> str:
    """The CREATE INDEX of the knowledge table's index `name` as its model declares it, options included: a bench
    that built its own copy measured an index the product does not have (a GIN index with a pending list)."""
    from django.db import connection

    from knowledge.models import KnowledgeItem

    index = next(index for index in KnowledgeItem._meta.indexes if index.name == name)
    return str(index.create_sql(KnowledgeItem, connection.schema_editor()))


def gin_pending(cursor: Any, index: str) -> int | None:
    """How many entries wait in the GIN index's pending list for a vacuum (every search reads them), or None where
    the server lacks pgstattuple."""
    from django.db import DatabaseError

    try:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        cursor.execute("SELECT pending_tuples FROM pgstatginindex(%s::regclass)", [index])
        return int(cursor.fetchone()[0])
    except DatabaseError:
        return None


def rules_of(corpus: Path) -> list[str]:
    """Distinct rule-sized pieces (a bullet or a short paragraph) of the rule files."""
    seen: set[str] = set()
    out: list[str] = []
    for line in corpus.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["text"]
        for piece in re.split(r"\n\s*\n|\n\s*[-*]\s+|\n\s*\d+\.\s+", text):
            piece = " ".join(piece.replace("#", " ").split())
            if 40 <= len(piece) <= 600 and piece not in seen:
                seen.add(piece)
                out.append(piece)
    return out


def _noisy(base: np.ndarray, rng: np.random.Generator) -> str:
    vec = base + rng.normal(0.0, 0.012, size=base.shape)
    vec /= np.linalg.norm(vec)
    return "[" + ",".join(f"{x:.5f}" for x in vec) + "]"


def _load(cursor: Any, owner_id: uuid.UUID, project_id: uuid.UUID, rules: list[str], vectors: np.ndarray,
          count: int, model: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    columns = ("id, created_at, updated_at, type, trigger, content, rationale, tags, source, stage, confidence, "
               "success_count, failure_count, decay_score, framework, language, embedding, embedding_model, "
               "owner_id, project_id")
    with cursor.copy(f"COPY knowledge_knowledgeitem ({columns}) FROM STDIN") as copy:
        for n in range(count):
            i = n % len(rules)
            copy.write_row((
                uuid.uuid4(), "now", "now", pick.choice(TYPES), "", rules[i], "", "{bench}", "bench", "",
                round(pick.uniform(0.5, 1.0), 2), 0, 0, 1.0, "", "", _noisy(vectors[i], rng), model,
                owner_id, project_id,
            ))


def cache_warm(cursor: Any) -> bool:
    """Reads the knowledge table and its search indexes into the server's page cache when they fit in three quarters
    of it, as a server that has served them for a while holds them. The load's COPY writes through a small ring of
    buffers and leaves the rows outside the cache, so the first few hundred searches would measure reads through the
    kernel rather than the search (docs/benchmarks.md, issue 17, eighteenth pass). False when they do not fit or
    the server has no pg_prewarm."""
    from django.db import DatabaseError

    cursor.execute("SELECT sum(pg_relation_size(r::regclass)) <= 0.75 * "
                   "pg_size_bytes(current_setting('shared_buffers')) FROM unnest(%s::text[]) r", [list(CACHED)])
    if not cursor.fetchone()[0]:
        return False
    try:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    except DatabaseError:
        return False
    for relation in CACHED:
        cursor.execute("SELECT pg_prewarm(%s)", [relation])
    return True


def _timed_queries(principal: Any, project_id: uuid.UUID, queries: list[tuple[str, str]],
                   fusion: Any = None) -> dict[str, Any]:
    """Latency of `knowledge_search` over (query, source rule) pairs, and how often a copy of the source
    rule is among the 5 hits (a check that speed was not bought with the right answer)."""
    from knowledge.embeddings import memo_clear
    from knowledge.selectors.search import knowledge_search

    knowledge_search(principal=principal, query=queries[0][0], project_id=project_id, fusion=fusion)  # warm caches
    times: list[float] = []
    parts: dict[str, list[float]] = {"model_wait": [], "sql": []}
    retrievals: set[str] = set()
    found = 0
    for text, source in queries:
        memo_clear()  # every timed query pays for its embedding, as a new prompt would
        start = time.perf_counter()
        result = knowledge_search(principal=principal, query=text, limit=5, project_id=project_id, fusion=fusion)
        times.append((time.perf_counter() - start) * 1000)
        retrievals.add(result.retrieval)
        found += any(hit.content == source for hit in result.hits)
        for key in parts:
            parts[key].append(result.meta["timings_ms"][key])
    times.sort()
    split = {f"{key}_p50": percentile(sorted(v), 50) for key, v in parts.items()}
    split.update({f"{key}_p95": percentile(sorted(v), 95) for key, v in parts.items()})
    return {"p50": percentile(times, 50), "p95": percentile(times, 95),
            "mean": round(statistics.fmean(times), 2), "retrieval": sorted(retrievals),
            "source_hit@5": round(found / len(queries), 3), **split}


def _measure_size(size: int, ctx: dict[str, Any]) -> dict[str, Any]:
    from django.db import connection

    from knowledge.selectors.search import fusion_from_settings
    from knowledge.term_stats import forget as term_stats_forget

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM knowledge_knowledgeitem WHERE owner_id = %s", [ctx["user"].id])
        cursor.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        cursor.execute(f"DROP INDEX IF EXISTS {GIN_INDEX}")
        start = time.perf_counter()
        _load(cursor.cursor, ctx["user"].id, ctx["project"].id, ctx["rules"], ctx["vectors"], size, ctx["model"],
              ctx["seed"])
        load_s = time.perf_counter() - start
        # The HNSW graph is built in memory (1M x 384 dims needs ~2 GB); past this limit pgvector
        # falls back to a much slower on-disk build.
        cursor.execute("SET maintenance_work_mem = '4GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 2")
        start = time.perf_counter()
        cursor.execute(declared_index_sql(HNSW_INDEX))
        hnsw_s = time.perf_counter() - start
        start = time.perf_counter()
        cursor.execute(declared_index_sql(GIN_INDEX))
        gin_s = time.perf_counter() - start
        cursor.execute("ANALYZE knowledge_knowledgeitem")
        cached = cache_warm(cursor)
    term_stats_forget()
    latency = _timed_queries(ctx["principal"], ctx["project"].id, ctx["queries"])
    # The baseline: every query term generates full-text candidates, however common (the engine before
    # term statistics); same queries, same rows, measured right after.
    baseline = _timed_queries(ctx["principal"], ctx["project"].id, ctx["queries"],
                              fusion_from_settings(fts_postings=BASELINE_POSTINGS))
    return {"items": size, "load_s": round(load_s, 1), "hnsw_build_s": round(hnsw_s, 1),
            "gin_build_s": round(gin_s, 1), "cached": cached, "query_ms": latency, "baseline_query_ms": baseline}


def _restore_indexes() -> None:
    """Builds the search indexes a load dropped, as the models declare them (`brain doctor --restore-indexes`)."""
    from brain.db_indexes import indexes_restore

    indexes_restore(lambda _line: None)


def run(args: argparse.Namespace) -> int:
    from knowledge.embeddings import embed_texts
    from projects.scope import Principal
    from projects.services.accounts import project_ensure_named

    sizes = [int(s) for s in str(args.items).split(",") if s.strip()]
    if not args.corpus.is_file() or not sizes or min(sizes) <= 0:
        print(f"brain: need --corpus FILE (got {args.corpus}) and positive --items sizes", file=sys.stderr)
        return 2
    rules = rules_of(args.corpus)
    shuffle = random.Random(args.seed)
    shuffle.shuffle(rules)
    rules = rules[: args.rules]
    start = time.perf_counter()
    vectors, model = embed_texts(rules)
    embed_s = time.perf_counter() - start
    queries = [(" ".join(r.split()[:10]), r) for r in shuffle.sample(rules, min(args.queries, len(rules)))]
    results = []
    try:
        with bench_user("scale") as user:
            project, _ = project_ensure_named(user=user, name="retrieval scale")
            ctx = {"user": user, "project": project, "principal": Principal(user=user), "rules": rules,
                   "vectors": np.array(vectors, dtype=np.float32), "model": model, "queries": queries,
                   "seed": args.seed}
            for size in sizes:
                results.append(_measure_size(size, ctx))
                print(f"measured {size} items", file=sys.stderr)
    finally:
        _restore_indexes()
    report = {"rules": len(rules), "rules_embedded_per_s": round(len(rules) / embed_s, 1), "model": model,
              "queries": len(queries), "sizes": results}
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    lines = [f"{report['rules']} distinct rules embedded with {report['model']} "
             f"({report['rules_embedded_per_s']}/s); {report['queries']} queries per size", "",
             f"{'items':>9} {'load s':>8} {'hnsw s':>8} {'gin s':>7} {'p50 ms':>8} {'p95 ms':>8} {'x prev':>6} "
             f"{'sql p50':>8} {'sql p95':>8} {'wait p50':>9} {'wait p95':>9} {'base p50':>9} {'base p95':>9} "
             f"{'hit@5':>6} {'base hit@5':>10}",
             "(x prev: p95 over the previous size's p95; wait: after the full-text list, for the model's query vector;",
             " base: every query term generates full-text candidates;",
             " hit@5: share of queries with a copy of their source rule among the 5 hits)"]
    previous = None
    for row in report["sizes"]:
        q, b = row["query_ms"], row["baseline_query_ms"]
        growth = f"{q['p95'] / previous:.2f}" if previous else "-"
        previous = q["p95"]
        lines.append(f"{row['items']:>9} {row['load_s']:>8} {row['hnsw_build_s']:>8} {row['gin_build_s']:>7} "
                     f"{q['p50']:>8} {q['p95']:>8} {growth:>6} {q['sql_p50']:>8} {q['sql_p95']:>8} "
                     f"{q['model_wait_p50']:>9} {q['model_wait_p95']:>9} {b['p50']:>9} {b['p95']:>9} "
                     f"{q['source_hit@5']:>6} {b['source_hit@5']:>10}")
    return "\n".join(lines)
