"""`brain bench jobs`: extraction yield and single-worker throughput on scripted sessions.

Each session is built from one rule set of ../shared/data/awesome_cursorrules.jsonl: its description is
the prompt and up to two of its directive bullets ("always", "never", "use", "don't") become the user's
corrections. Extraction runs in this process, as one solo worker would, in the configured mode
(heuristic unless a model and key are set). The bench user and everything it created are deleted after."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

HELP = "measure extraction yield (kept rules, merged duplicates) and extract throughput per worker"
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "awesome_cursorrules.jsonl"
_DIRECTIVE = re.compile(r"^\s*[-*]\s+(.*\b(always|never|use|don'?t|do not|prefer|avoid)\b.*)$", re.IGNORECASE)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)


def scripted_sessions(path: Path, count: int) -> list[dict[str, Any]]:
    """Prompt and corrections per rule set, in file order."""
    scripted = []
    for line in path.read_text().splitlines()[:count]:
        record = json.loads(line)
        text = record["text"]
        match = re.search(r'description:\s*"?([^"\n]+)', text)
        bullets = [m.group(1).strip() for m in map(_DIRECTIVE.match, text.splitlines()) if m][:2]
        scripted.append({"prompt": match.group(1) if match else record["rule_set"], "corrections": bullets})
    return scripted


def _measure(user: Any, project: Any, scripted: list[dict[str, Any]]) -> dict[str, Any]:
    from django.utils import timezone

    from sessions.extraction import extract_session
    from sessions.models import Session
    from sessions.services import EventDraft, session_events_log_many, session_start

    yielded, created, merged, durations = 0, 0, 0, []
    for script in scripted:
        session = session_start(user=user, project=project, prompt=script["prompt"])
        drafts = [EventDraft("user_correction", text) for text in script["corrections"]]
        if drafts:
            session_events_log_many(session=session, drafts=drafts)
        Session.objects.filter(id=session.id).update(ended_at=timezone.now(), success=True)
        session.refresh_from_db()
        started = time.perf_counter()
        result = extract_session(session, None)
        durations.append(time.perf_counter() - started)
        yielded += 1 if result.created or result.merged else 0
        created, merged = created + len(result.created), merged + len(result.merged)
    return {"sessions": len(scripted), "sessionsWithKeptRule": yielded, "rulesCreated": created,
            "duplicatesMerged": merged, "extractP50Ms": round(statistics.median(durations) * 1000, 1),
            "extractP95Ms": round(statistics.quantiles(durations, n=20)[-1] * 1000, 1),
            "sessionsPerSecondPerWorker": round(len(durations) / sum(durations), 2)}


def run(args: argparse.Namespace) -> int:
    from knowledge.embeddings import embed_texts
    from knowledge.llm import configured_model
    from projects.services import project_ensure_named, user_create

    scripted = scripted_sessions(args.data, args.sessions)
    embed_texts(["warm up the embedder so the first session does not pay for loading it"])
    user = user_create(email=f"bench-jobs-{uuid.uuid4().hex[:8]}@example.invalid")
    try:
        project, _ = project_ensure_named(user=user, name="bench jobs")
        figures = {"mode": configured_model(), **_measure(user, project, scripted)}
    finally:
        user.delete()  # cascades to its org, project, sessions and knowledge
    print(json.dumps(figures, indent=2))
    return 0
