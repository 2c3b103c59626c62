"""A guard rule said again is one rule: the same correction twice stored two rules, and every check then named the
same blocker twice. The rule said again takes the newer severity and alternative; at once it is still one rule; a
deleted rule, another project's and another tenant's stay apart."""

from __future__ import annotations

import pytest

from knowledge.guard_models import GuardPattern
from knowledge.models import KnowledgeItem
from knowledge.selectors.guard import guard_check
from knowledge.services.guard import guard_rule_add
from projects.services.accounts import project_ensure_named
from tests.conftest import Tenant
from tests.support.race import while_uncommitted


def _add(tenant: Tenant, severity: str = "warn", alternative: str = "", project: object = None) -> KnowledgeItem:
    return guard_rule_add(owner=tenant.user, project=project or tenant.project, kind="command_prefix",
                          pattern="git push --force", text="Force pushes rewrite history", severity=severity,
                          alternative=alternative)


@pytest.mark.django_db
def test_the_same_rule_twice_is_one_rule_with_the_newer_word(tenant_a: Tenant, tenant_b: Tenant) -> None:
    first = _add(tenant_a)
    assert guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action="git push --force").allowed
    again = _add(tenant_a, severity="block", alternative="git push --force-with-lease")
    assert again.id == first.id and GuardPattern.objects.filter(knowledge__owner=tenant_a.user).count() == 1
    verdict = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action="git push --force")
    assert not verdict.allowed and len(verdict.blockers) == 1 and not verdict.warnings
    assert GuardPattern.objects.get(knowledge=first).alternative == "git push --force-with-lease"
    _add(tenant_a, severity="block")  # no alternative given: the one it has stays
    assert GuardPattern.objects.get(knowledge=first).alternative == "git push --force-with-lease"
    # another tenant's identical rule and another project's are their own
    theirs = _add(tenant_b)
    other_project, _ = project_ensure_named(user=tenant_a.user, name="Second App")
    elsewhere = _add(tenant_a, project=other_project)
    assert len({first.id, theirs.id, elsewhere.id}) == 3
    assert guard_check(owner_id=tenant_b.user.id, project_id=tenant_b.project.id, action="git push --force").allowed


@pytest.mark.django_db
def test_a_deleted_rule_said_again_is_a_new_rule(tenant_a: Tenant, tenant_b: Tenant) -> None:
    first = _add(tenant_a)
    KnowledgeItem.objects.filter(id=first.id).update(deleted_at=first.created_at)
    assert _add(tenant_a).id != first.id


@pytest.mark.django_db(transaction=True)
def test_the_same_rule_twice_at_once_is_one_rule(tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert while_uncommitted(lambda: _add(tenant_a), lambda: _add(tenant_a, severity="block")) == []
    rules = GuardPattern.objects.filter(knowledge__owner=tenant_a.user)
    assert rules.count() == 1 and rules.get().severity == "block"  # the later word, made after the first committed
    assert not GuardPattern.objects.filter(knowledge__owner=tenant_b.user).exists()
