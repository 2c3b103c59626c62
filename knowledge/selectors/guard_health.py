"""`brain doctor`'s guard line: stored `command_regex` rules the guard skips because RE2 cannot compile them.

New patterns are refused at creation (`knowledge.guard_regex`); these are rows stored before that, or written
past the service (SQL, a bulk update). Across every tenant: it is the operator's report, never a tenant's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from brain.errors import ValidationFailed
from knowledge.guard_models import GuardKind, GuardPattern
from knowledge.guard_regex import command_regex_compile

LISTED = 5  # rules named on the line; the count covers the rest


@dataclass(frozen=True)
class SkippedRule:
    rule_id: str
    pattern: str
    problem: str


def guard_rules_skipped() -> list[SkippedRule]:
    """Live command_regex rules (of every tenant) that the guard cannot run, oldest first."""
    rows = (GuardPattern.objects.filter(kind=GuardKind.COMMAND_REGEX, knowledge__deleted_at__isnull=True,
                                        knowledge__superseded_by__isnull=True)
            .order_by("created_at").values_list("knowledge_id", "pattern"))
    skipped = []
    for rule_id, pattern in rows.iterator():
        try:
            command_regex_compile(pattern)
        except ValidationFailed as exc:
            skipped.append(SkippedRule(str(rule_id), pattern, exc.message))
    return skipped


def guard_health() -> tuple[bool, str]:
    """For `brain doctor`: failing while any live rule is skipped, naming the first few and the fix."""
    skipped = guard_rules_skipped()
    if not skipped:
        return True, "every command_regex rule compiles with RE2"
    named = ", ".join(f"{rule.rule_id} `{rule.pattern}`" for rule in skipped[:LISTED])
    more = f" and {len(skipped) - LISTED} more" if len(skipped) > LISTED else ""
    return False, (f"{len(skipped)} command_regex rule(s) are not RE2 syntax and are skipped by the guard: "
                   f"{named}{more}. Delete each and add it again in RE2 syntax (no backreferences, lookaround or "
                   "possessive quantifiers); the guard logs op=guard.rule_skipped with the reason")
