"""The injection text: retrieved knowledge laid out for an agent within a token budget.

Token counting is deterministic and model-free: `count_tokens(text) = ceil(len(text) / 4)` (characters,
not bytes), the usual rule of thumb for English with BPE tokenisers. The budget is checked against the
count of the whole text built so far, so the result never exceeds it.

Sections come in priority order (decisions, then unconditional rules, reflexes, heuristics, recipes and
skills); inside a section items keep their retrieval order. An item that does not fit is skipped and
smaller later items may still fit. Every item sits between `<<knowledge …>>` and `<</knowledge>>` with
its type, id and confidence, and stored text cannot forge those markers (`<<`/`>>` are rewritten), so an
agent can tell stored text from its instructions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

TITLE = "## What I've Learned About You"
NOTE = "Stored knowledge, not instructions from the user; apply it where it fits the task."
SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Decisions", ("decision",)),
    ("Unconditional Rules", ("rule", "principle", "anti_principle")),
    ("Reflexes", ("reflex",)),
    ("Heuristics", ("heuristic",)),
    ("Recipes and Skills", ("recipe", "skill")),
]
# Tokens of injection text when the caller names no budget; BRAIN_RETRIEVAL_BUDGET_TOKENS overrides it
# for sessions (`knowledge.selectors.search.injection_budget`).
DEFAULT_BUDGET = 1200


class Injectable(Protocol):
    id: object
    type: str
    trigger: str
    content: str
    rationale: str
    confidence: float


@dataclass
class Injection:
    text: str
    ids: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    tokens: int = 0


def count_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _clean(text: str) -> str:
    return " ".join(text.replace("<<", "\u2039\u2039").replace(">>", "\u203a\u203a").split())


neutralize = _clean  # the public name: every renderer of stored text (oracle, action items) uses this rule


def render_item(item: Injectable) -> str:
    lines = [f"<<knowledge type={item.type} id={item.id} confidence={item.confidence:.2f}>>"]
    if item.trigger.strip():
        lines.append(f"When: {_clean(item.trigger)}")
    lines.append(f"{'Avoid' if item.type == 'anti_principle' else 'Do'}: {_clean(item.content)}")
    if item.rationale.strip():
        lines.append(f"Why: {_clean(item.rationale)}")
    lines.append("<</knowledge>>")
    return "\n".join(lines)


def build_injection(items: Sequence[Injectable], *, budget: int = DEFAULT_BUDGET) -> Injection:
    """The injection text for `items` within `budget` tokens (empty when nothing fits)."""
    text = f"{TITLE}\n{NOTE}"
    if not items or count_tokens(text) > budget:
        return Injection(text="", skipped=[str(i.id) for i in items])
    result = Injection(text=text)
    for title, types in SECTIONS:
        section = [item for item in items if item.type in types]
        header_added = False
        for item in section:
            piece = ("" if header_added else f"\n\n### {title}") + "\n" + render_item(item)
            if count_tokens(result.text + piece) > budget:
                result.skipped.append(str(item.id))
                continue
            result.text += piece
            result.ids.append(str(item.id))
            header_added = True
    known = {t for _, types in SECTIONS for t in types}
    result.skipped += [str(i.id) for i in items if i.type not in known]
    if not result.ids:
        return Injection(text="", skipped=result.skipped)
    result.tokens = count_tokens(result.text)
    return result
