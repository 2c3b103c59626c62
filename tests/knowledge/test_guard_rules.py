"""Guard decision tables: commands and paths blocked, warned or allowed; semantic warnings; a second tenant."""

from __future__ import annotations

import pytest

from brain.errors import ValidationFailed
from knowledge.guard_models import GuardDecision
from knowledge.selectors.guard import guard_check, parse_action
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.guard import guard_decide, guard_rule_add
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

RULES = [
    ("path_glob", "dist/**", "block", "Editing dist/ files is blocked by repo policy", "edit src/ and rebuild"),
    ("path_glob", "**/*.min.js", "warn", "Minified bundles are build output", ""),
    ("command_prefix", "git push --force", "block", "Force pushes rewrite history", "git push --force-with-lease"),
    ("command_regex", r"\brm\s+-rf\s+/(\s|$)", "block", "Never delete the filesystem root", ""),
    ("lock_file", "package-lock.json", "warn", "Lock files change through npm install only", "npm install <pkg>"),
    ("generated_marker", "@generated", "warn", "This file is auto-generated", ""),
    ("command_exact", "pnpm test", "warn", "`pnpm test` failed twice here", "npm test"),
]
# action -> (allowed, blockers, warnings)
TABLE = {
    "edit dist/app.js": (False, 1, 0),
    "edit ./dist/css/site.css": (False, 1, 0),
    "edit packages/ui/dist/index.js": (False, 1, 0),
    "edit src/app.ts": (True, 0, 0),
    "edit distribution/notes.md": (True, 0, 0),
    "edit src/vendor/jquery.min.js": (True, 0, 1),
    "cp build/out.js dist/out.js": (False, 1, 0),
    "git push --force origin main": (False, 1, 0),
    "git push --force-with-lease origin main": (True, 0, 0),
    "git push origin main": (True, 0, 0),
    "rm -rf /": (False, 1, 0),
    "rm -rf ./build": (True, 0, 0),
    "edit package-lock.json": (True, 0, 1),
    "edit frontend/package-lock.json": (True, 0, 1),
    "edit api/schema.py containing @generated header": (True, 0, 1),
    "pnpm test": (True, 0, 1),
    "pnpm test --watch": (True, 0, 0),
    "npm test": (True, 0, 0),
}


@pytest.fixture
def rules(tenant_a: Tenant) -> None:
    for kind, pattern, severity, text, alternative in RULES:
        guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind=kind, pattern=pattern, text=text,
                       severity=severity, alternative=alternative)


@pytest.mark.parametrize("action", list(TABLE))
def test_decision_table(rules: None, tenant_a: Tenant, tenant_b: Tenant, action: str) -> None:
    verdict = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action=action, semantic=False)
    assert (verdict.allowed, len(verdict.blockers), len(verdict.warnings)) == TABLE[action], verdict
    other = guard_check(owner_id=tenant_b.user.id, project_id=tenant_b.project.id, action=action, semantic=False)
    assert other.allowed and not other.warnings  # the second tenant has no rules


def test_blocker_names_rule_and_alternative(rules: None, tenant_a: Tenant) -> None:
    verdict = guard_decide(owner=tenant_a.user, project=tenant_a.project, action="git push --force origin main")
    assert "Force pushes" in verdict.blockers[0] and "git push --force-with-lease" in verdict.blockers[0]
    assert verdict.rule_ids[0] in verdict.blockers[0]
    row = GuardDecision.objects.get()
    assert row.allowed is False and row.blockers == verdict.blockers and row.owner == tenant_a.user


def test_bad_rules_and_actions_change_nothing(tenant_a: Tenant) -> None:
    for kind, pattern in (("command_regex", "(unclosed"), ("shell", "x"), ("path_glob", "")):
        with pytest.raises(ValidationFailed):
            guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind=kind, pattern=pattern, text="no way")
    with pytest.raises(ValidationFailed):
        guard_decide(owner=tenant_a.user, project=tenant_a.project, action="  ")
    assert GuardDecision.objects.count() == 0


def test_rule_changes_are_seen_at_once(tenant_a: Tenant) -> None:
    check = lambda: guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id,  # noqa: E731
                                action="edit build/x.js", semantic=False)
    assert check().allowed
    item = guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern="build/",
                          text="build/ is output")
    assert not check().allowed
    item.deleted_at = item.created_at
    item.save()
    assert check().allowed


def test_semantic_warning_never_blocks(tenant_a: Tenant, tenant_b: Tenant) -> None:
    draft = KnowledgeDraft(content="Do not run database migrations against production by hand",
                           type="anti_principle", confidence=1.0)
    knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=draft)
    close = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id,
                        action="run the database migrations on production manually")
    assert close.allowed and len(close.warnings) == 1 and "forbidden action" in close.warnings[0]
    far = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action="ls -la src")
    assert far.allowed and not far.warnings
    other = guard_check(owner_id=tenant_b.user.id, project_id=tenant_b.project.id,
                        action="run the database migrations on production manually")
    assert not other.warnings


def test_parse_action() -> None:
    assert parse_action("edit ./dist/a.js").paths == ("dist/a.js",) and parse_action("edit dist/a.js").command == ""
    assert parse_action("npm   run build").command == "npm run build"
    assert parse_action("echo 'unbalanced").command == "echo 'unbalanced"


def test_index_finds_what_a_full_scan_finds(rules: None, tenant_a: Tenant) -> None:
    from knowledge.selectors.guard import CACHE, deterministic_verdict

    index = CACHE.rules(tenant_a.user.id, tenant_a.project.id)
    every = [r for bucket in (index.scan, index.markers, *index.by_word.values(), *index.exact.values(),
                              *index.by_segment.values(), *index.by_name.values()) for r in bucket]
    assert len(every) == len(RULES) and len(index.scan) == 2  # the unanchored regex and the leading-** glob
    for action in [*TABLE, "RM -rf /", "danger", "edit a/b/dist/c/d.js"]:
        parsed = parse_action(action)
        assert deterministic_verdict(index, parsed).blockers == deterministic_verdict(every, parsed).blockers
        assert deterministic_verdict(index, parsed).warnings == deterministic_verdict(every, parsed).warnings


def test_every_rule_write_reaches_the_cache_and_nothing_else_does(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from django.utils import timezone

    from knowledge.guard_models import GuardPattern
    from knowledge.models import KnowledgeItem
    from knowledge.selectors.guard import rule_set_version

    def blocked(tenant: Tenant) -> bool:
        return not guard_check(owner_id=tenant.user.id, project_id=tenant.project.id, action="edit out/a.js",
                               semantic=False).allowed

    def version(tenant: Tenant) -> int:
        return rule_set_version(owner_id=tenant.user.id, project_id=tenant.project.id)

    assert not blocked(tenant_a) and version(tenant_a) == 0
    rule = guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern="out/**",
                          text="out/ is build output")
    assert blocked(tenant_a) and not blocked(tenant_b) and version(tenant_b) == 0
    before = version(tenant_a)
    KnowledgeItem.objects.filter(pk=rule.pk).update(decay_score=0.5, confidence=0.4)  # not what a rule is made of
    assert version(tenant_a) == before
    GuardPattern.objects.filter(knowledge=rule).update(pattern="build/**")  # a bulk update, no save()
    assert version(tenant_a) > before and not blocked(tenant_a)
    GuardPattern.objects.filter(knowledge=rule).update(pattern="out/**")
    assert blocked(tenant_a)
    KnowledgeItem.objects.filter(pk=rule.pk).update(deleted_at=timezone.now())
    assert not blocked(tenant_a)
    KnowledgeItem.objects.filter(pk=rule.pk).update(deleted_at=None, project=None)  # to the owner's own scope
    assert blocked(tenant_a) and version(tenant_b) == 0
    KnowledgeItem.objects.filter(pk=rule.pk).update(review_status="pending")  # held for review: not a rule now
    assert not blocked(tenant_a)
    KnowledgeItem.objects.filter(pk=rule.pk).update(review_status="approved")
    assert blocked(tenant_a)
    rule.delete()  # the ORM cascade: pattern first, then the row
    assert not blocked(tenant_a) and not GuardPattern.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_decision_outside_a_transaction_is_stored_whole(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from django.db import connection

    assert not connection.in_atomic_block  # the one-statement, asynchronously committed insert
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern="dist/**",
                   text="dist/ is build output", alternative="edit src/")
    verdict = guard_decide(owner=tenant_a.user, project=tenant_a.project, action=" edit dist/app.js ")
    stored = GuardDecision.objects.get(owner=tenant_a.user)
    assert (stored.action, stored.allowed, stored.project_id) == ("edit dist/app.js", False, tenant_a.project.id)
    assert stored.blockers == verdict.blockers and stored.rule_ids == verdict.rule_ids and stored.warnings == []
    assert stored.created_at is not None and stored.updated_at is not None
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"  # only that one commit was asynchronous
    assert not GuardDecision.objects.filter(owner=tenant_b.user).exists()


def test_a_scope_knows_whether_it_stores_a_forbidden_action(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """The check embeds the action only when the scope (the project, or the owner's project-less rows) stores a live
    anti-principle; another tenant's, a superseded or a deleted one does not count."""
    from django.utils import timezone

    from knowledge.selectors.guard import scope_state

    def stored(tenant: Tenant, project: bool = True) -> bool:
        return scope_state(owner_id=tenant.user.id, project_id=tenant.project.id if project else None)[1]

    draft = KnowledgeDraft(content="Never edit applied migrations", type="anti_principle", confidence=1.0)
    in_project = knowledge_create(owner=tenant_b.user, project=tenant_b.project, draft=draft)
    assert stored(tenant_b) and not stored(tenant_b, project=False) and not stored(tenant_a)
    project_less = knowledge_create(owner=tenant_a.user, project=None, draft=draft)
    assert stored(tenant_a) and stored(tenant_a, project=False) and not stored(tenant_b, project=False)
    project_less.deleted_at = timezone.now()
    project_less.save()
    in_project.superseded_by = knowledge_create(
        owner=tenant_b.user, project=tenant_b.project, draft=KnowledgeDraft(content="Keep migrations", confidence=1.0))
    in_project.save()
    assert not stored(tenant_a) and not stored(tenant_b)


def test_semantic_warnings_compare_only_the_scopes_live_forbidden_actions(tenant_a: Tenant, tenant_b: Tenant) -> None:
    from knowledge.models import KnowledgeItem

    text = "Do not run database migrations against production by hand"
    action = "run the database migrations on production manually"
    live = knowledge_create(owner=tenant_a.user, project=None, draft=KnowledgeDraft(
        content=text, type="anti_principle", confidence=1.0))
    knowledge_create(owner=tenant_b.user, project=tenant_b.project, draft=KnowledgeDraft(
        content=text, type="anti_principle", confidence=1.0))

    def warned() -> list[str]:
        return guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action=action).rule_ids

    assert warned() == [str(live.id)]  # the owner's project-less rule applies in every project of theirs
    for held in ({"review_status": "pending"}, {"embedding_model": "another-model"}, {"deleted_at": live.created_at}):
        KnowledgeItem.objects.filter(id=live.id).update(**held)
        assert warned() == [], held
        KnowledgeItem.objects.filter(id=live.id).update(
            review_status=live.review_status, embedding_model=live.embedding_model, deleted_at=None)
    assert warned() == [str(live.id)]


def test_a_guard_rules_pattern_and_type_are_not_edited_apart_from_its_guard(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """The rule's trigger is the pattern the guard matches: an edit of it (or of the type) is refused with what to
    do instead, and an edit of the text leaves the guard as it was."""
    from knowledge.guard_models import GuardPattern
    from knowledge.services.curate import knowledge_edit

    rule = guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="command_exact", pattern="rm -rf build",
                          text="Never delete the build folder by hand; run make clean")
    fields = {"principal": tenant_a.principal, "item_id": rule.id, "rationale": "", "tags": ["guard:command_exact"],
              "confidence": 1.0}
    for change in ({"trigger": "rm -rf dist", "type": "guard"}, {"trigger": "rm -rf build", "type": "heuristic"}):
        with pytest.raises(ValidationFailed, match="remove the rule and add it again"):
            knowledge_edit(content=rule.content, **change, **fields)  # type: ignore[arg-type]
    knowledge_edit(content="Never delete the build folder by hand; run `make clean` instead", trigger="rm -rf build",
                   type="guard", **fields)  # type: ignore[arg-type]
    assert GuardPattern.objects.get(knowledge=rule).pattern == "rm -rf build"
    assert guard_decide(owner=tenant_a.user, project=tenant_a.project, action="rm -rf build").allowed is False
    assert guard_decide(owner=tenant_b.user, project=tenant_b.project, action="rm -rf build").allowed is True


def test_a_forbidden_action_is_found_whatever_plan_the_table_invites(tenant_a: Tenant, tenant_b: Tenant) -> None:
    """A large table can make PostgreSQL order the nearest forbidden actions by the HNSW index: it walks the whole
    table's graph for `hnsw.ef_search` rows and keeps the forbidden ones of the scope among them, usually none (at
    100,000 rules the check warned of nothing it warned of at 10). Here sorting is priced out and the walk keeps one
    row, the tenant's own rule in the action's very words: every forbidden action of the scope must still be ranked."""
    from django.db import connection

    action = "run the database migrations on production manually"
    forbidden = knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=KnowledgeDraft(
        content="Do not run database migrations against production by hand", type="anti_principle", confidence=1.0))
    knowledge_create(owner=tenant_a.user, project=tenant_a.project, draft=KnowledgeDraft(content=action, type="rule"))
    theirs = knowledge_create(owner=tenant_b.user, project=tenant_b.project, draft=KnowledgeDraft(
        content="Do not run database migrations against production by hand", type="anti_principle", confidence=1.0))
    with connection.cursor() as cursor:
        # A statement prepared earlier on this connection may hold a generic plan: plan it with these settings.
        cursor.execute("SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL enable_sort = off; "
                       "SET LOCAL hnsw.ef_search = 1")
    mine = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action=action)
    assert mine.allowed and mine.rule_ids == [str(forbidden.id)]
    other = guard_check(owner_id=tenant_b.user.id, project_id=tenant_b.project.id, action=action)
    assert other.rule_ids == [str(theirs.id)]
