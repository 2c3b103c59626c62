"""Reads of the Cognibrain tools: coding context (path globs and language) and the caller's health."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePosixPath

from django.db.models import Q
from django.utils import timezone

from brain.health import check_broker, check_database
from knowledge.embeddings import embedder_health
from knowledge.globs import compiled_glob
from knowledge.guard_models import DreamRun
from knowledge.models import KnowledgeItem, KnowledgeType, review_usable_by
from knowledge.selectors.live import personal_rows
from knowledge.selectors.search import decay_floor, knowledge_search
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from sessions.models import Session

LANGUAGES = {
    ".py": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript", ".jsx": "javascript",
    ".mjs": "javascript", ".go": "go", ".rs": "rust", ".rb": "ruby", ".java": "java", ".kt": "kotlin",
    ".cs": "csharp", ".php": "php", ".swift": "swift", ".c": "c", ".h": "c", ".cpp": "cpp", ".hpp": "cpp",
    ".sql": "sql", ".sh": "shell", ".css": "css", ".scss": "css", ".html": "html", ".vue": "vue",
    ".svelte": "svelte", ".dart": "dart", ".scala": "scala", ".ex": "elixir", ".exs": "elixir",
}
PER_LIST = 20
CONVENTION_TYPES = (
    "rule", "principle", "reflex", "heuristic", "recipe", "decision", "anti_principle", "guard", "skill",
)
STALE_AFTER = timedelta(days=60)


def languages_of(files: Sequence[str]) -> set[str]:
    return {LANGUAGES[s] for f in files if (s := PurePosixPath(f).suffix.lower()) in LANGUAGES}


def _scope_name(item: KnowledgeItem) -> str:
    if item.project_id:
        return "task" if any(t.startswith("task:") for t in item.tags) else "repo"
    return "global" if "scope:global" in item.tags else "user"


def _path_match(item: KnowledgeItem, files: Sequence[str], langs: set[str]) -> bool:
    if item.always_apply:
        return True
    if item.file_globs and files:
        globs = [compiled_glob(g) for g in item.file_globs]
        return any(g.matches(f.removeprefix("./")) for g in globs for f in files)
    return bool(item.language) and item.language.lower() in langs


def _live(principal: Principal, session: Session) -> Q:
    scope = Q(project=session.project) | personal_rows(principal)
    return scope & review_usable_by(principal.user) & Q(
        deleted_at__isnull=True, superseded_by__isnull=True, decay_score__gt=decay_floor(), confidence__gte=0.5,
        type__in=CONVENTION_TYPES)


@dataclass
class CodingContext:
    corrections: list[tuple[str, str]] = field(default_factory=list)
    conventions: list[tuple[str, str]] = field(default_factory=list)


def coding_context(*, principal: Principal, session: Session, task: str, files: Sequence[str]) -> CodingContext:
    """Items whose globs, language or always-apply flag match the files, then the task's best matches."""
    langs = languages_of(files)
    rows = KnowledgeItem.objects.filter(_live(principal, session)).order_by("-confidence", "-created_at")
    matched = [r for r in rows.filter(Q(always_apply=True) | ~Q(file_globs=[]) | ~Q(language=""))[:500]
               if _path_match(r, files, langs)]
    hits = knowledge_search(principal=principal, query=task, limit=10, project_id=session.project_id).hits
    by_search = {h.id for h in hits}
    matched += list(rows.filter(id__in=by_search).exclude(id__in=[r.id for r in matched]))
    out = CodingContext()
    for item in matched:
        if any(t.startswith("task:") and t != f"task:{session.id}" for t in item.tags):
            continue
        target = out.corrections if ("correction" in item.tags or item.source == "user_correction") else out.conventions
        if len(target) < PER_LIST:
            target.append((" ".join(item.content.split()), _scope_name(item)))
    return out


@dataclass(frozen=True)
class Health:
    status: str
    memory_count: int
    stale_candidates: int
    last_dream_cycle: datetime | None
    degraded: list[str]


def _degraded() -> list[str]:
    parts = []
    if not check_database()[0]:
        parts.append("database")
    if not check_broker()[0]:
        parts.append("broker")
    if not embedder_health()[0]:
        parts.append("embedder")
    return parts


def health_of(*, principal: Principal, now: datetime | None = None) -> Health:
    visible = projects_visible(principal=principal).values("id")
    mine = Q(project__in=visible) | personal_rows(principal)
    live = KnowledgeItem.objects.filter(mine, review_usable_by(principal.user), deleted_at__isnull=True,
                                        superseded_by__isnull=True).exclude(type=KnowledgeType.ACTION_ITEM)
    old = (now or timezone.now()) - STALE_AFTER
    stale = live.filter(Q(decay_score__lte=decay_floor() + 0.2)
                        | Q(last_used_at__lt=old) | Q(last_used_at__isnull=True, created_at__lt=old))
    scopes = [f"project:{p['id']}" for p in visible] + [f"owner:{principal.user.id}"]
    runs = DreamRun.objects.filter(scope__in=scopes).order_by("-created_at")
    last = runs.values_list("created_at", flat=True).first()
    degraded = _degraded()
    return Health("degraded" if degraded else "healthy", live.count(), stale.count(), last, degraded)


def bindings_open() -> set[str]:
    """The transport bindings that have an open current session (the partial index of open bound sessions)."""
    return set(Session.objects.filter(ended_at__isnull=True).exclude(binding="").values_list("binding", flat=True))
