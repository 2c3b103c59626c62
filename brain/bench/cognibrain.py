"""`brain bench cognibrain`: p50/p95 of cognibrain_context, cognibrain_guard and cognibrain_outcome (the
services behind the tools) at 10,000 memories, and of the guard at 10,000 guard rules.

Memories are real rule texts (awesome_cursorrules.jsonl) loaded with COPY as in `brain bench
retrieval-scale`; guard rules are generated patterns of every kind. Baselines measured in the same run:
the brain tools' retrieval (`knowledge_inject`, what brain_retrieve_knowledge runs) for the context pack,
and the guard with no rules. The bench user and everything it owns are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from brain.bench.bench_users import bench_user
from brain.bench.lme import percentile
from brain.bench.scale import DEFAULT_CORPUS, _load, cache_warm, rules_of

HELP = "measure p50/p95 of the Cognibrain context pack, guard and outcome at 10,000 memories / rules"
KINDS = ["path_glob", "command_prefix", "command_regex", "lock_file", "generated_marker", "command_exact"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--memories", type=int, default=10_000, help="memories in the measured project")
    parser.add_argument("--rules", type=int, default=10_000, help="guard rules in the guard project")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per measurement")
    parser.add_argument("--distinct", type=int, default=1000, help="distinct rule texts embedded (the text pool)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="awesome_cursorrules.jsonl")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=int, default=7)


def _timed(calls: list[Callable[[], object]]) -> dict[str, float]:
    calls[0]()  # warm caches (compiled rules, tokenizer, model)
    times = []
    for i, call in enumerate(calls):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(calls)}", file=sys.stderr)
    times.sort()
    return {"p50_ms": percentile(times, 50) or 0.0, "p95_ms": percentile(times, 95) or 0.0, "n": len(times)}


def _pattern(kind: str, i: int) -> str:
    return {"path_glob": f"generated{i}/**", "command_prefix": f"tool{i} deploy",
            "command_regex": rf"^danger{i}\b", "lock_file": f"deps{i}.lock", "generated_marker": f"@generated-{i}",
            "command_exact": f"make target{i}"}[kind]


def _guard_rules(user: Any, project: Any, count: int) -> None:
    from knowledge.guard_models import GuardPattern
    from knowledge.models import KnowledgeItem

    items = KnowledgeItem.objects.bulk_create([
        KnowledgeItem(owner=user, project=project, type="guard", content=f"bench guard rule {i}", confidence=1.0,
                      trigger=_pattern(KINDS[i % len(KINDS)], i), source="bench") for i in range(count)])
    GuardPattern.objects.bulk_create([
        GuardPattern(knowledge=item, kind=KINDS[i % len(KINDS)], pattern=item.trigger,
                     severity="block" if i % 2 else "warn") for i, item in enumerate(items)])


def _actions(n: int, rng: random.Random) -> list[str]:
    shapes = ["edit src/app{0}.ts", "edit generated{0}/x.js", "tool{0} deploy --prod", "npm run build{0}",
              "edit deps{0}.lock", "git commit -m 'fix {0}'"]
    return [rng.choice(shapes).format(rng.randrange(20_000)) for _ in range(n)]


def _measure(args: argparse.Namespace, ctx: dict[str, Any]) -> dict[str, Any]:
    from knowledge.selectors.guard import guard_check
    from knowledge.services.guard import guard_decide
    from sessions.services.cognibrain import outcome_record
    from sessions.services.context_pack import context_pack
    from sessions.services.current import session_current
    from sessions.services.open import knowledge_inject

    principal, rng = ctx["principal"], random.Random(args.seed)
    session = session_current(principal=principal, repo=ctx["memories"].name)
    tasks = [" ".join(r.split()[:10]) for r in rng.sample(ctx["rules"], min(args.calls, len(ctx["rules"])))]
    actions = _actions(args.calls, rng)
    user, mem, guards, empty = ctx["user"], ctx["memories"], ctx["guards"], ctx["empty"]
    print("context pack ...", file=sys.stderr)
    out = {"context": _timed([lambda t=t: context_pack(principal=principal, session=session, task=t, budget=1200)
                              for t in tasks])}
    out["baseline_retrieve"] = _timed([lambda t=t: knowledge_inject(principal=principal, prompt=t, project_id=mem.id)
                                       for t in tasks])
    print("guard ...", file=sys.stderr)
    out["guard_10k_memories"] = _timed([lambda a=a: guard_decide(owner=user, project=mem, action=a) for a in actions])
    out["guard_10k_rules"] = _timed([lambda a=a: guard_decide(owner=user, project=guards, action=a) for a in actions])
    out["guard_10k_rules_deterministic"] = _timed([
        lambda a=a: guard_check(owner_id=user.id, project_id=guards.id, action=a, semantic=False) for a in actions])
    out["baseline_guard_no_rules"] = _timed([lambda a=a: guard_decide(owner=user, project=empty, action=a)
                                             for a in actions])
    print("outcome ...", file=sys.stderr)
    out["outcome"] = _timed([lambda i=i: outcome_record(session=session, command=f"npm run step{i % 40}",
                                                        exit_code=i % 3, stderr="boom" if i % 3 else "")
                             for i in range(args.calls)])
    return out


def _setup(args: argparse.Namespace, user: Any) -> dict[str, Any]:
    from django.db import connection

    from knowledge.embeddings import embed_texts
    from projects.scope import Principal
    from projects.services.accounts import project_ensure_named

    rules = rules_of(args.corpus)
    random.Random(args.seed).shuffle(rules)
    rules = rules[: args.distinct]
    print(f"embedding {len(rules)} rule texts ...", file=sys.stderr)
    vectors, model = embed_texts(rules)
    memories, _ = project_ensure_named(user=user, name="bench/memories")
    guards, _ = project_ensure_named(user=user, name="bench/guards")
    empty, _ = project_ensure_named(user=user, name="bench/empty")
    with connection.cursor() as cursor:
        _load(cursor, user.id, memories.id, rules, np.array(vectors, dtype=np.float32), args.memories, model, args.seed)
    _guard_rules(user, guards, args.rules)
    with connection.cursor() as cursor:
        # What autovacuum does within a minute of such loads, and what a server that has served the rows holds:
        # without statistics every scope was counted and planned blind, and the rule-set version read walked the
        # 10,000 versions its rules' inserts left behind (docs/benchmarks.md, twentieth pass).
        cursor.execute("VACUUM ANALYZE knowledge_knowledgeitem, knowledge_guardpattern, knowledge_guardruleversion")
        cached = cache_warm(cursor)
    return {"user": user, "principal": Principal(user=user), "memories": memories, "guards": guards,
            "empty": empty, "rules": rules, "cached": cached}


def run(args: argparse.Namespace) -> int:
    if not args.corpus.is_file() or min(args.memories, args.rules, args.calls) <= 0:
        print(f"brain: need --corpus FILE (got {args.corpus}) and positive sizes", file=sys.stderr)
        return 2
    with bench_user("cognibrain") as user:
        ctx = _setup(args, user)
        figures = _measure(args, ctx)
    report = {"memories": args.memories, "rules": args.rules, "calls": args.calls, "cached": ctx["cached"],
              "figures": figures}
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    lines = [f"Cognibrain at {report['memories']} memories / {report['rules']} guard rules, "
             f"{report['calls']} calls each", f"{'measurement':34} {'p50 ms':>8} {'p95 ms':>8}"]
    for name, fig in report["figures"].items():
        lines.append(f"{name:34} {fig['p50_ms']:>8} {fig['p95_ms']:>8}")
    return "\n".join(lines)
