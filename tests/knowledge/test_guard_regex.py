"""command_regex guard rules run on RE2: a backtracking pattern answers, a pattern RE2 cannot run is refused where
rules are made, an old stored one is skipped (logged once, reported by `brain doctor`) while the other rules apply,
and ordinary patterns match what they matched as Python regexes. A second tenant sees none of it."""

from __future__ import annotations

import json
import random
import re

import pytest
from django.test import Client
from django.urls import reverse

from brain.db_url import connection_url
from brain.errors import ValidationFailed
from knowledge.guard_models import GuardKind, GuardPattern
from knowledge.guard_regex import command_regex_compile
from knowledge.models import KnowledgeItem, KnowledgeType
from knowledge.selectors.guard import guard_check
from knowledge.selectors.guard_health import guard_health
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.guard import guard_decide, guard_rule_add
from projects.services.accounts import user_create
from tests.conftest import Tenant
from tests.support.proc import run_brain

CATASTROPHIC = r"^(a+)+$"  # exponential backtracking in Python's re on a run of `a` that does not end the text


def _allowed(tenant: Tenant, action: str) -> bool:
    return guard_check(owner_id=tenant.user.id, project_id=tenant.project.id, action=action, semantic=False).allowed


@pytest.mark.django_db(transaction=True)  # the child process reads the rules this test stores
def test_a_catastrophic_pattern_answers_at_once(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """Run in a child process so a regression fails here instead of hanging the suite; its timeout is only a hang
    guard, never a measure."""
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_regex", pattern=CATASTROPHIC,
                   text="nothing but a's")
    code = ("import json; from knowledge.selectors.guard import guard_check\n"
            f"def allowed(owner, project, action):\n"
            "    return guard_check(owner_id=owner, project_id=project, action=action, semantic=False).allowed\n"
            f"a, b = ({str(tenant_a.user.id)!r}, {str(tenant_a.project.id)!r}), "
            f"({str(tenant_b.user.id)!r}, {str(tenant_b.project.id)!r})\n"
            "print(json.dumps([allowed(*a, 'a' * 5000 + '!'), allowed(*a, 'a' * 5000), allowed(*b, 'a' * 5000)]))")
    done = run_brain("manage", "shell", "-c", code, env={"DATABASE_URL": connection_url()}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, False, True]


@pytest.mark.django_db
@pytest.mark.parametrize(("pattern", "construct"), [
    (r"git push(?=.*--force)", "lookahead"),
    (r"(?<!--dry-run )rm -rf", "lookbehind"),
    (r"^(\w+) \1$", "backreference"),
    (r"^rm a++", "possessive quantifier"),
    (r"(?>ab|a)c", "atomic group"),
    (r"rm (unclosed", "missing )"),
])
def test_a_pattern_re2_cannot_run_is_refused_and_nothing_is_stored(tenant_a: Tenant, tenant_b: Tenant, pattern: str,
                                                                   construct: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_regex", pattern=pattern,
                       text="a rule RE2 cannot run")
    assert construct in refused.value.message and "RE2 syntax" in refused.value.message
    assert pattern in refused.value.message
    assert not KnowledgeItem.objects.exists() and not GuardPattern.objects.exists()
    assert _allowed(tenant_a, "git push --force") and _allowed(tenant_b, "git push --force")


@pytest.mark.django_db
def test_the_admin_cannot_add_a_guard_pattern_past_the_service(client: Client, tenant_a: Tenant,
                                                               tenant_b: Tenant) -> None:
    """Its form cannot set the rule or the pattern; a rule is added by `guard_rule_add`, which checks the pattern."""
    client.force_login(user_create(email="ops@brain.example", password="x-long-password", is_staff=True))
    url = reverse("admin:knowledge_guardpattern_add")
    assert client.get(url).status_code == 403
    assert client.post(url, {"severity": "block", "alternative": ""}).status_code == 403
    assert not GuardPattern.objects.exists()
    assert client.get(reverse("admin:knowledge_guardpattern_changelist")).status_code == 200


def _stored_before_re2(tenant: Tenant, pattern: str) -> KnowledgeItem:
    """A rule as an older version stored it: its pattern was only checked by Python's re."""
    item = knowledge_create(owner=tenant.user, project=tenant.project, draft=KnowledgeDraft(
        content="Never force-push except with a dry run first", type=KnowledgeType.GUARD, trigger=pattern,
        tags=["guard:command_regex"], confidence=1.0))
    GuardPattern.objects.create(knowledge=item, kind=GuardKind.COMMAND_REGEX, pattern=pattern)
    return item


@pytest.mark.django_db
def test_an_old_rule_re2_cannot_run_is_skipped_logged_once_and_reported(
        tenant_a: Tenant, tenant_b: Tenant, caplog: pytest.LogCaptureFixture) -> None:
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_prefix", pattern="git push --force",
                   text="Force pushes rewrite history", alternative="git push --force-with-lease")
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_regex", pattern=r"^rm\s+-rf\s+/$",
                   text="Never delete the filesystem root")
    old = _stored_before_re2(tenant_a, r"^git (?!status)\w+ --hard")
    healthy, line = guard_health()
    assert not healthy and str(old.id) in line and "1 command_regex rule(s) are not RE2 syntax" in line

    blocked = guard_decide(owner=tenant_a.user, project=tenant_a.project, action="git push --force origin main")
    assert not blocked.allowed and str(old.id) not in blocked.rule_ids  # the other rules still apply
    assert not _allowed(tenant_a, "rm -rf /")
    assert _allowed(tenant_a, "git reset --hard")  # what the skipped rule would have blocked: not guessed either way
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern="dist/**",
                   text="dist/ is build output")  # a new rule set: the scope's rules are compiled again
    assert not _allowed(tenant_a, "edit dist/app.js")
    skipped = [r.op_fields for r in caplog.records if getattr(r, "op_fields", {}).get("op") == "guard.rule_skipped"]
    assert len(skipped) == 1 and skipped[0]["rule"] == str(old.id) and "lookahead" in skipped[0]["problem"]
    assert _allowed(tenant_b, "git push --force origin main") and _allowed(tenant_b, "rm -rf /")

    old.deleted_at = old.created_at
    old.save()
    assert guard_health() == (True, "every command_regex rule compiles with RE2")


# Patterns RE2 accepts, written for Python's re, and commands (after whitespace normalization) including non-ASCII
# letters and digits, where the engines' classes differ.
PATTERNS = [
    r"\brm\s+-rf\s+/(\s|$)", r"^git\s+push\b.*--force\b", r"(?i)^DROP\s+TABLE", r"^echo \w+$", r"^cp [\w./-]+ \w",
    r"\d{3}", r"^x \D+$", r"[^\w ]", r"\W", r"^rm [^\d]+$", r"a{,2}b", r"^a{,}$", r"\\w", r"[]x]", r"[^]x]y",
    r"^kubectl (delete|drain) ", r"(a+)+$", r"^\w+\s\d+$", r"\.env\b", r"curl .*-k\b",
]
COMMANDS = [
    "rm -rf /", "rm -rf /tmp", "git push --force origin", "git push origin --force-with-lease", "drop table users",
    "echo héllo", "echo hello", "echo ٣٤", "cp été/x.txt ñ", "run 123", "run ١٢٣", "x été", "x 12", "rm abc",
    "rm ab٣", "aab", "b", "aaa", "a", "", r"echo \w", "x]", "zy", "]y", "kubectl delete pod", "mot٣ ٣٤", "cat .env",
    "cat .envrc", "curl -k https://x", "wget ¡", "naïve 12",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_ordinary_patterns_match_what_they_matched_as_python_regexes(pattern: str) -> None:
    python, re2 = re.compile(pattern), command_regex_compile(pattern)
    for command in COMMANDS:
        assert (python.search(command) is not None) is (re2.search(command) is not None), command


# Pieces of random patterns. Left out: \b and \W inside brackets, which stay ASCII in RE2 (docs/tools.md).
PIECES = ["a", "é", "1", "٣", " ", r"\w", r"\d", r"\D", r"\s", r"\S", ".", "[", "]", "^", "(", ")", "|", "*", "+", "?",
          "{,2}", "{1,}", "[^", "-", r"\\", "$", "_", "{", "}", ","]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # Python's "possible nested set" about `[[`
def test_random_patterns_match_what_they_matched_as_python_regexes() -> None:
    rng = random.Random(7)
    compared = 0
    for _ in range(6_000):
        pattern = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8)))
        try:
            python, re2 = re.compile(pattern), command_regex_compile(pattern)
        except (re.error, ValidationFailed):
            continue  # refused by either: not a pattern that matched something before and runs now
        compared += 1
        for _ in range(4):
            command = " ".join("".join(rng.choice("aé1٣-_\\,{}") for _ in range(rng.randint(0, 4)))
                               for _ in range(rng.randint(1, 3)))
            assert (python.search(command) is not None) is (re2.search(command) is not None), (pattern, command)
    assert compared > 2_000


@pytest.mark.django_db
def test_an_ordinary_rule_blocks_as_before_for_its_tenant_only(tenant_a: Tenant, tenant_b: Tenant) -> None:
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_regex", pattern=r"^echo\s+\w+$",
                   text="no single-word echoes")
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_regex", pattern=r"\bprod\b",
                   text="nothing against prod", severity="warn")
    assert not _allowed(tenant_a, "echo  héllo")  # \w is a Unicode letter, as in Python
    assert _allowed(tenant_a, "echo héllo world")
    warned = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action="deploy prod now",
                         semantic=False)
    assert warned.allowed and len(warned.warnings) == 1 and "nothing against prod" in warned.warnings[0]
    assert _allowed(tenant_a, "deploy production")
    assert _allowed(tenant_b, "echo héllo") and not guard_check(
        owner_id=tenant_b.user.id, project_id=tenant_b.project.id, action="deploy prod now", semantic=False).warnings
