"""The script of `brain bench loop`: rules per stack cut from awesome_cursorrules.jsonl (labelled by the rule
set they come from, never by hand), task prompts per stack, prompts that fit no stack, and the plan of
sessions (which project, which stack, whether it carries a correction or a recipe)."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

# A rule set belongs to a stack when its file name says so; its pieces carry that label. A piece that names
# another stack is left out, so a label never contradicts the text.
_FILE_STACK = [("fastapi", re.compile(r"fastapi")), ("django", re.compile(r"django")),
               ("go", re.compile(r"(^|-)go(-|\.mdc)|golang")), ("react", re.compile(r"(^|-)react(?!-native)"))]
_MENTION = {"fastapi": re.compile(r"\bfastapi\b", re.I), "django": re.compile(r"\bdjango\b", re.I),
            "go": re.compile(r"\b(go|golang|goroutines?)\b"), "react": re.compile(r"\breact\b", re.I)}
_ROLE = re.compile(r"^(you are|your |as an? )|:$", re.I)
_CODE = re.compile(r"[{};=<>]|\bimport\b|\bconst\b|\(\)")
STACKS = ("react", "fastapi", "go", "django")

PROMPTS = {
    "react": [
        "Build a React component that shows a paginated list of invoices with a loading state",
        "Refactor this React form to use hooks and controlled inputs instead of a class component",
        "Add a modal dialog React component for confirming deletion of a user",
        "Fix the React component that re-renders on every keystroke in the search box",
        "Write a custom React hook that fetches the current user's profile and caches it",
        "Split the React dashboard page into smaller reusable components with props",
    ],
    "fastapi": [
        "Add a FastAPI endpoint POST /orders that validates the body and returns the created order",
        "Write FastAPI dependency injection for the database session in the orders router",
        "Add request validation with Pydantic models to the FastAPI users API",
        "Make the FastAPI endpoints async and handle errors with proper HTTP exceptions",
        "Create a FastAPI router for products with pagination query parameters",
        "Add a FastAPI middleware that logs request latency",
    ],
    "go": [
        "Write a Go HTTP handler that returns JSON for GET /health and GET /users/{id}",
        "Add context cancellation and timeouts to the Go service that calls the payments API",
        "Refactor the Go package to return wrapped errors instead of panicking",
        "Implement a worker pool in Go with goroutines and channels for image resizing",
        "Write table-driven tests in Go for the pricing package",
        "Add graceful shutdown to the Go HTTP server",
    ],
    "django": [
        "Add a Django model for Invoice with a foreign key to Customer and write its migration",
        "Create a Django class-based view that lists a customer's orders with pagination",
        "Write a Django form with validation for the signup page",
        "Optimise the Django queryset that loads orders with their items (N+1 queries)",
        "Add a Django admin configuration for the Product model with search and filters",
        "Write Django tests for the order checkout view",
    ],
}
# Tasks no taught rule fits: the brain should stay silent.
NOFIT = [
    "Write a README section that explains how to start the stack with Docker Compose",
    "Write a bash script that rotates the nginx log files every night",
    "Draft the release notes for version 2.3 from the changelog",
    "Fix the typo in the LICENSE header and update the copyright year",
    "Write a SQL query that reports monthly revenue per region from the sales table",
    "Set up a GitHub Actions workflow that builds the documentation site",
]


@dataclass(frozen=True)
class Size:
    rules_per_stack: int
    sessions_per_stack: int
    nofit: int


SIZES = {"toy": Size(rules_per_stack=2, sessions_per_stack=2, nofit=2),
         "full": Size(rules_per_stack=5, sessions_per_stack=6, nofit=6)}


def stack_of(rule_set: str) -> str | None:
    name = rule_set.lower()
    return next((stack for stack, pattern in _FILE_STACK if pattern.search(name)), None)


def _pieces(text: str) -> list[str]:
    out = []
    for piece in re.split(r"\n\s*\n|\n\s*[-*]\s+|\n\s*\d+\.\s+", text):
        piece = " ".join(piece.replace("#", " ").replace("`", "").split())
        if 25 <= len(piece) <= 400 and not piece.startswith(("description:", "globs:", "---")):
            out.append(piece)
    return out


def stack_rules(corpus: Path, seed: int) -> dict[str, list[str]]:
    """Distinct rule pieces per stack that name their stack, in a seeded order."""
    found: dict[str, list[str]] = {stack: [] for stack in STACKS}
    seen: set[str] = set()
    for line in corpus.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        stack = stack_of(record["rule_set"])
        if stack is None:
            continue
        for piece in _pieces(record["text"]):
            if piece not in seen and _rule_like(piece) and not _other_stack(piece, stack):
                seen.add(piece)
                found[stack].append(piece)
    rng = random.Random(seed)
    for stack, pieces in found.items():
        rng.shuffle(pieces)
        # Pieces that name their stack first: a taught rule should be recognisably about its stack.
        pieces.sort(key=lambda piece, s=stack: _MENTION[s].search(piece) is None)  # type: ignore[misc]
    return found


def _rule_like(piece: str) -> bool:
    # Prose advice, not code or a file tree: the way teams phrase the rules they give agents.
    return not _CODE.search(piece) and not _ROLE.search(piece) and len(piece.split()) >= 4


def _other_stack(piece: str, stack: str) -> bool:
    return any(pattern.search(piece) for other, pattern in _MENTION.items() if other != stack)


@dataclass(frozen=True)
class Planned:
    project: str  # "alpha" | "beta"
    stack: str | None  # None: a prompt that fits no taught rule in that project
    prompt: str
    correction: str = ""  # a rule the user states during the session (learned at close)
    recipe: str = ""  # a recipe the agent hands over at close


def plan(size: Size, rules: dict[str, list[str]], taught: int) -> list[Planned]:
    """Alpha has every stack taught, beta only go and django. Corrections come in alpha's fastapi and react
    sessions (the next matching one must get them back); beta also gets fastapi prompts, which fit nothing
    there, so a correction learned in alpha that shows up in beta is a leak."""
    sessions: list[Planned] = []
    for i in range(size.sessions_per_stack):
        for stack in STACKS:
            correction = rules[stack][taught + i] if stack in ("fastapi", "react") and i % 2 == 0 else ""
            recipe = rules[stack][taught + size.sessions_per_stack + 1] if stack == "go" else ""
            sessions.append(Planned("alpha", stack, PROMPTS[stack][i % len(PROMPTS[stack])], correction, recipe))
        if i < size.nofit:
            sessions.append(Planned("alpha", None, NOFIT[i % len(NOFIT)]))
    for i in range(max(1, size.sessions_per_stack // 2)):
        sessions.append(Planned("beta", "go", PROMPTS["go"][-1 - i]))
        sessions.append(Planned("beta", None, PROMPTS["fastapi"][i]))  # fastapi is not taught in beta
    return sessions
