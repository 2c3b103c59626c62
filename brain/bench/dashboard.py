"""`brain bench dashboard`: server time per dashboard page (p50/p95) at a given data size.

A bench user gets a project with N knowledge rows (real rules from awesome_cursorrules.jsonl, loaded with
COPY as in `brain bench retrieval-scale`: one embedding per distinct rule, noisy copies) and S closed
sessions, each with events, injected/used knowledge and finished jobs, plus pending proposals, action
items and a month of health snapshots. Each page is then requested R times through Django's full
request stack in this process (middleware, view, selectors, template), signed in as that user: the
time is server time, without network or browser. The query count of each page is printed too.
The bench user and everything it owns are deleted at the end, and what a killed run left first
(`brain.bench.bench_users`)."""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from brain.bench.bench_users import bench_user
from brain.bench.lme import percentile
from brain.bench.scale import DEFAULT_CORPUS, _load, rules_of

HELP = "measure server time per dashboard page (p50/p95) with N knowledge rows and S sessions"
EVENTS_PER_SESSION = 6


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--items", type=int, default=10000, help="knowledge rows")
    parser.add_argument("--sessions", type=int, default=1000, help="closed sessions")
    parser.add_argument("--requests", type=int, default=40, help="timed requests per page")
    parser.add_argument("--rules", type=int, default=400, help="distinct rules embedded (the text pool)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="awesome_cursorrules.jsonl")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=int, default=7)


def _knowledge(ctx: dict[str, Any], args: argparse.Namespace) -> None:
    import numpy as np
    from django.db import connection

    from knowledge.embeddings import EmbeddingUnavailable, embed_texts

    rules = rules_of(args.corpus)[: args.rules]
    try:
        vectors, model = embed_texts(rules)
        matrix = np.asarray(vectors, dtype=np.float64)
    except EmbeddingUnavailable:  # full-text only, as a server without an embedder would run
        matrix, model = np.zeros((len(rules), 384)) + 1 / 384**0.5, ""
    with connection.cursor() as cursor:
        _load(cursor.cursor, ctx["user"].id, ctx["project"].id, rules, matrix, args.items, model, args.seed)
        cursor.execute("ANALYZE knowledge_knowledgeitem")
    ctx["rules"] = rules


def _sessions(ctx: dict[str, Any], args: argparse.Namespace) -> None:
    from django.utils import timezone

    from knowledge.models import KnowledgeItem
    from sessions.models import Session, SessionEvent, SessionJob, SessionKnowledgeApplication

    pick, now = random.Random(args.seed), timezone.now()
    user, project = ctx["user"], ctx["project"]
    ids = list(KnowledgeItem.objects.filter(owner=user).values_list("id", flat=True)[:2000])
    sessions = []
    for n in range(args.sessions):
        start = now - timedelta(days=pick.uniform(0, 30))
        sessions.append(Session(user=user, project=project, client_type=pick.choice(["claude_code", "cursor"]),
                                prompt=pick.choice(ctx["rules"])[:200], started_at=start,
                                ended_at=start + timedelta(minutes=pick.randint(5, 90)), success=n % 4 != 0,
                                quality_score=pick.randint(30, 100), outcome={}))
    Session.objects.bulk_create(sessions, batch_size=500)
    events, apps, jobs = [], [], []
    for s in sessions:
        for i in range(EVENTS_PER_SESSION):
            events.append(SessionEvent(session=s, user=user, project=project, event_type="note",
                                       content=pick.choice(ctx["rules"])[:300], occurred_at=s.started_at
                                       + timedelta(minutes=i)))
        chosen = pick.sample(ids, 3)
        apps += [SessionKnowledgeApplication(session=s, knowledge_id=k, role="injected") for k in chosen]
        apps.append(SessionKnowledgeApplication(session=s, knowledge_id=chosen[0], role="used_reported",
                                                outcome=s.success))
        jobs.append(SessionJob(session=s, user=user, name="extract", status="done", items=pick.randint(0, 2)))
    SessionEvent.objects.bulk_create(events, batch_size=2000)
    SessionKnowledgeApplication.objects.bulk_create(apps, batch_size=2000)
    SessionJob.objects.bulk_create(jobs, batch_size=2000)
    ctx["session"] = sessions[0]


def _review(ctx: dict[str, Any], args: argparse.Namespace) -> None:
    from django.utils import timezone

    from knowledge.models import HealthSnapshot, Proposal
    from knowledge.services.teach import knowledge_teach

    user, project = ctx["user"], ctx["project"]
    Proposal.objects.bulk_create([
        Proposal(owner=user, project=project, session_id=ctx["session"].id, target_key=f"bench-{i}",
                 kind="new_knowledge", content=ctx["rules"][i % len(ctx["rules"])][:300], score=5)
        for i in range(40)])
    for i in range(20):
        knowledge_teach(principal=ctx["principal"], rule=f"Bench action item {i}", type="action_item",
                        tags=["action-item", f"for:{user.email}", *(["blocker"] if i % 5 == 0 else [])],
                        project_id=str(project.id))
    today = timezone.localdate()
    HealthSnapshot.objects.bulk_create([
        HealthSnapshot(project=project, as_of=today - timedelta(days=d), active=args.items, used_last_30_days=900,
                       average_confidence=0.75, median_age_days=12, contradictions=d % 3) for d in range(30)])


def _pages(ctx: dict[str, Any]) -> dict[str, str]:
    from django.urls import reverse

    from knowledge.models import KnowledgeItem

    p, item = ctx["project"].id, KnowledgeItem.objects.filter(owner=ctx["user"]).only("id").first()
    assert item is not None
    knowledge = reverse("dash_knowledge", args=[p])
    return {
        "overview": reverse("dash_overview", args=[p]), "knowledge list": knowledge,
        "knowledge filtered": knowledge + "?type=rule&min_confidence=0.8&decay=live&page=3",
        "knowledge search": knowledge + "?q=",
        "knowledge detail": reverse("dash_knowledge_detail", args=[p, item.id]),
        "sessions list": reverse("dash_sessions", args=[p]),
        "session detail": reverse("dash_session", args=[p, ctx["session"].id]),
        "review": reverse("dash_review", args=[p]), "action items": reverse("dash_actions", args=[p]),
    }


def _time_page(client: Any, url: str, requests: int, queries: list[str]) -> dict[str, Any]:
    from django.db import connection

    times: list[float] = []
    counted = [0]

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        counted[0] += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):  # survives the reconnect a request's end may cause
        assert client.get(url + (queries[0] if url.endswith("?q=") else "")).status_code == 200
    for n in range(requests):
        target = url + queries[n % len(queries)] if url.endswith("?q=") else url
        start = time.perf_counter()
        response = client.get(target)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (target, response.status_code)
    times.sort()
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "queries": counted[0]}


def run(args: argparse.Namespace) -> int:
    from urllib.parse import quote_plus

    from django.test import Client

    from projects.scope import Principal
    from projects.services.accounts import project_ensure_named

    if not args.corpus.is_file() or args.items < 10 or args.sessions < 1 or args.requests < 1:
        print(f"brain: need --corpus FILE (got {args.corpus}), --items >= 10, --sessions and --requests >= 1",
              file=sys.stderr)
        return 2
    with bench_user("dashboard") as user:
        project, _ = project_ensure_named(user=user, name="Bench dashboard")
        ctx: dict[str, Any] = {"user": user, "project": project, "principal": Principal(user=user)}
        start = time.perf_counter()
        _knowledge(ctx, args)
        _sessions(ctx, args)
        _review(ctx, args)
        setup_s = time.perf_counter() - start
        client = Client()
        client.force_login(user)
        queries = [quote_plus(" ".join(r.split()[:6])) for r in ctx["rules"][:50]]
        pages = {name: _time_page(client, url, args.requests, queries) for name, url in _pages(ctx).items()}
    report = {"items": args.items, "sessions": args.sessions, "requests_per_page": args.requests,
              "setup_s": round(setup_s, 1), "pages": pages}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"dashboard pages at {args.items} knowledge rows, {args.sessions} sessions "
          f"({args.requests} requests each, server time in-process):")
    for name, figures in pages.items():
        p50, p95, n = figures["p50_ms"], figures["p95_ms"], figures["queries"]
        print(f"  {name:<20} p50 {p50:>7} ms  p95 {p95:>7} ms  {n} queries")
    return 0
