"""The relevance floor of injection: under it a retrieved row is not injected, and the caller is told why.

Retrieval always finds nearest neighbours, even for a task no stored rule fits, so a session would always
get something. The floor is applied to the final score each hit arrives with (`KnowledgeHit.score`, the
re-scored fusion; see knowledge/scoring.py) and nothing else, so it keeps working when the fusion changes;
only its value has to be re-calibrated then. How the default was calibrated: `brain bench loop` records
the score of every injected item with its corpus label (relevant to the prompt's stack or not); the
default is the lowest threshold at which at least 90% of the items kept are relevant and no-fit prompts
stay silent, rounded down (docs/benchmarks.md, "brain bench loop", holds the figures). Re-run it with
`BRAIN_INJECT_FLOOR=0 brain bench loop --json` and read `scores` after changing retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from django.conf import settings

from brain.config import overridden

NO_MATCH = "nothing injected: no stored knowledge matches this task"
_WORD = re.compile(r"[a-z0-9][a-z0-9.+#-]*")


class Scored(Protocol):
    score: float


S = TypeVar("S", bound=Scored)


@dataclass(frozen=True)
class InjectionFloor:
    """Code default; BRAIN_INJECT_FLOOR overrides it (`settings.BRAIN_INJECT`)."""

    floor: float = 0.75

    @classmethod
    def from_settings(cls) -> InjectionFloor:
        return overridden(cls(), getattr(settings, "BRAIN_INJECT", {}))


@dataclass(frozen=True)
class Floored:
    kept: list[Scored]
    below: int
    best_below: float
    floor: float

    other_stack: int = 0

    def notice(self) -> str:
        """Why rows were left out (empty when none were)."""
        other = (f"{self.other_stack} item(s) written for another stack than this task's left out"
                 if self.other_stack else "")
        if not self.below:
            return other
        if not self.kept:
            return "; ".join(filter(None, [
                f"nothing injected: the best match scored {self.best_below:.2f}, under the relevance floor "
                f"{self.floor:.2f}; no stored knowledge fits this task closely enough", other]))
        return "; ".join(filter(None, [f"{self.below} weaker match(es) under the relevance floor "
                                       f"{self.floor:.2f} left out", other]))


# Stack names a task may mention, besides the frameworks of the candidate rows themselves.
KNOWN_STACKS = frozenset({
    "react", "vue", "angular", "svelte", "sveltekit", "nextjs", "nuxt", "solid", "django", "flask", "fastapi",
    "rails", "laravel", "symfony", "spring", "express", "nestjs", "flutter", "swiftui", "go", "rust", "dotnet",
    "phoenix", "htmx", "tailwind",
})
_ALIASES = {"golang": "go", "next.js": "nextjs", "vue.js": "vue", "vuejs": "vue", "reactjs": "react",
            ".net": "dotnet", "asp.net": "dotnet", "node.js": "express"}


def _names(text: str, stacks: set[str]) -> set[str]:
    # "go" is also an English verb: only the capitalised word (or "golang") names the language.
    words = {_ALIASES.get(w, w) for w in _WORD.findall(text.lower())}
    if "go" in words and not re.search(r"\bGo\b", text) and "golang" not in text.lower():
        words.discard("go")
    return {stack for stack in stacks | KNOWN_STACKS if stack in words}


def other_stack(*, prompt: str, framework: str, frameworks: dict[str, str]) -> set[str]:
    """Ids of rows written for another stack than the task's: the task names a stack (its `framework`, or a
    stack name among the candidates' frameworks appearing in the prompt) and the row's framework is set,
    not among those named. Rows without a framework, and tasks naming no stack, are never excluded."""
    stacks = {_ALIASES.get(f.lower(), f.lower()) for f in frameworks.values() if f}
    named = {_ALIASES.get(framework.lower(), framework.lower())} if framework else _names(prompt, stacks)
    if not named:
        return set()
    return {kid for kid, f in frameworks.items() if f and _ALIASES.get(f.lower(), f.lower()) not in named}


def above_floor(hits: Sequence[S], *, floor: InjectionFloor | None = None,
                excluded: set[str] = frozenset()) -> tuple[list[S], Floored]:  # type: ignore[assignment]
    """The hits at or over the floor and not `excluded` (another stack's), in their order, and what was cut."""
    value = (floor or InjectionFloor.from_settings()).floor
    fitting = [h for h in hits if str(getattr(h, "id", "")) not in excluded]
    kept = [h for h in fitting if h.score >= value]
    below = [h.score for h in fitting if h.score < value]
    return kept, Floored(kept=list(kept), below=len(below), best_below=max(below, default=0.0), floor=value,
                         other_stack=len(hits) - len(fitting))
