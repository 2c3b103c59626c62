"""Heuristics that read operator text: "not X, use Y" corrections and "never edit dist/**" policies.

Deterministic on purpose: the same sentence always gives the same rule, with or without a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.guard_models import GuardKind, GuardSeverity

_I = re.IGNORECASE
_CORRECTIONS = [
    re.compile(r"^(?:no[,.!]?\s+)?(?:do\s+not|don'?t|never|not)\s+(?:use\s+|run\s+)?(?P<x>.+?)\s*[,;:-]+\s*"
               r"(?:but\s+|instead\s+)?(?:use|run)\s+(?P<y>.+?)(?:\s+instead)?[.!]?$", _I),
    re.compile(r"^(?:please\s+)?(?:use|run)\s+(?P<y>.+?)\s*[,;]?\s+(?:and\s+)?not\s+(?P<x>.+?)[.!]?$", _I),
    re.compile(r"^(?:please\s+)?(?:use|run)\s+(?P<y>.+?)\s+instead\s+of\s+(?P<x>.+?)[.!]?$", _I),
]
_POLICY = re.compile(
    r"^(?:never|do\s+not|don'?t)\s+(?P<verb>edit|modify|touch|change|write(?:\s+to)?|run|use)\s+"
    r"(?P<what>`[^`]+`|\S+)(?:\s+files?)?(?P<rest>.*)$", _I)
_INSTEAD = re.compile(
    r"(?:[,;(]|\s)\s*(?:instead[,:]?\s+)?(?P<alt>(?:use|run|edit|change)\s+.+?)(?:\s+instead)?[.)!]?$", _I)
LOCK_FILES = {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "uv.lock", "Cargo.lock",
              "Gemfile.lock", "composer.lock", "go.sum", "Pipfile.lock", "bun.lockb"}


def _strip(text: str) -> str:
    return text.strip().strip("`'\"").strip()


def correction_parse(text: str) -> tuple[str, str] | None:
    """(forbidden, better) when the text says "not X, use Y" in one of its usual forms."""
    for pattern in _CORRECTIONS:
        match = pattern.match(text.strip())
        if match and _strip(match["x"]) and _strip(match["y"]):
            return _strip(match["x"]), _strip(match["y"])
    return None


@dataclass(frozen=True)
class Policy:
    kind: str
    pattern: str
    severity: str
    alternative: str


def _path_kind(what: str) -> tuple[str, str]:
    if what in LOCK_FILES:
        return GuardKind.LOCK_FILE, what
    if what.endswith("/"):
        return GuardKind.PATH_GLOB, what + "**"
    return GuardKind.PATH_GLOB, what


def policy_parse(text: str) -> Policy | None:
    """A repo policy stated as "never edit dist/** ..., edit src/ instead" (blocks edits of the glob) or
    "never run `cmd` ..., use `other`" (blocks commands starting with cmd)."""
    match = _POLICY.match(" ".join(text.split()))
    if not match:
        return None
    verb, what, rest = match["verb"].lower(), _strip(match["what"]), match["rest"]
    instead = _INSTEAD.search(rest)
    alternative = _strip(instead["alt"]) if instead else ""
    if verb in ("run", "use"):
        if not match["what"].startswith("`"):
            return None  # "never use tabs" is a convention, not a command; commands are quoted
        return Policy(GuardKind.COMMAND_PREFIX, what, GuardSeverity.BLOCK, alternative)
    if "/" not in what and "." not in what and "*" not in what:
        return None  # "never edit them" names no path
    kind, pattern = _path_kind(what)
    return Policy(kind, pattern, GuardSeverity.BLOCK, alternative)
