"""cognibrain_context: a compact pack of what fits the task, in priority order, within a token budget
counted by the embedding model's tokenizer, recorded as injected into the current session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowledge.selectors.search import KnowledgeHit, knowledge_search
from knowledge.tokens import token_counts
from projects.scope import Principal
from sessions.models import ApplicationRole, Session
from sessions.services.open import applications_record

CANDIDATES = 20
VERIFIED = 0.5  # items below this confidence are unverified guesses and stay out of the pack
SECTIONS: list[tuple[str, str]] = [
    ("forbidden", "Forbidden actions and repo policies"),
    ("procedure", "Procedures"),
    ("correction", "Previous corrections"),
    ("pitfall", "Known pitfalls"),
    ("decision", "Decisions"),
    ("command", "Commands and conventions"),
]


def _section(hit: KnowledgeHit) -> str:
    if hit.type in ("anti_principle", "guard"):
        return "forbidden"
    if hit.type in ("recipe", "skill"):
        return "procedure"
    if "correction" in hit.tags:
        return "correction"
    if hit.type in ("heuristic", "reflex"):
        return "pitfall"
    return "decision" if hit.type == "decision" else "command"


def _visible_here(hit: KnowledgeHit, session: Session) -> bool:
    tasks = [t for t in hit.tags if t.startswith("task:")]
    return hit.confidence >= VERIFIED and (not tasks or tasks == [f"task:{session.id}"])


def _line(hit: KnowledgeHit) -> str:
    text = " ".join(hit.content.split())
    # Another member's rule names its author, so the agent never takes a colleague's rule for the user's.
    return f"- {text} (taught by {hit.author})" if hit.author else f"- {text}"


@dataclass(frozen=True)
class Pack:
    context: str
    ids: list[str]
    token_count: int


def pack_render(hits: Sequence[KnowledgeHit], budget: int) -> Pack:
    """Lines in section order; an item that does not fit is skipped (a shorter later one may still fit).
    WordPiece splits on whitespace first, so the tokens of the joined text are exactly the sum of its lines' tokens
    (tests/sessions/test_cognibrain_sessions.py holds that), and the lines are counted in one call."""
    placed = [(key, title, [(_line(h), str(h.id)) for h in hits if _section(h) == key]) for key, title in SECTIONS]
    headers = [f"## {title}" for _, title, _ in placed]
    counts = iter(token_counts([*headers, *(line for *_, lines in placed for line, _ in lines)]))
    header_costs = [next(counts) for _ in headers]
    entries: list[tuple[str, str | None]] = []  # (line, knowledge id; None for a section header)
    used = 0
    for header, header_cost, (_, _, lines) in zip(headers, header_costs, placed, strict=True):
        header_done = False
        for line, kid in lines:
            cost = next(counts) + (0 if header_done else header_cost)
            if used + cost > budget:
                continue
            if not header_done:
                entries.append((header, None))
                header_done = True
            entries.append((line, kid))
            used += cost
    return Pack("\n".join(line for line, _ in entries), [kid for _, kid in entries if kid is not None], used)


def context_pack(*, principal: Principal, session: Session, task: str, budget: int) -> Pack:
    found = knowledge_search(principal=principal, query=task, limit=CANDIDATES, project_id=session.project_id)
    hits = [h for h in found.hits if _visible_here(h, session)]
    pack = pack_render(hits, budget)
    applications_record(session=session, knowledge_ids=pack.ids, role=ApplicationRole.INJECTED)
    return pack
