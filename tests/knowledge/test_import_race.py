"""The same rule file imported twice at the same moment (a double-clicked upload, a CLI import run while the
dashboard's runs) stores each rule once: the second import waits for the first and finds its rows. Before, both
looked for identical rows before either had committed, found none, and every rule was stored twice."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem
from knowledge.services.absorb import knowledge_absorb
from knowledge.services.create import KnowledgeDraft
from knowledge.services.imports import ImportFile, knowledge_import
from tests.conftest import Tenant
from tests.support.race import while_uncommitted

pytestmark = pytest.mark.django_db(transaction=True)

RULES = b"""# Team rules

- Always run the migrations check before merging a schema change.
- Never log a bearer token, not even its prefix.
"""
EXPORT = (b'{"format": "external-brain-export/2", "knowledge": ['
          b'{"id": "5b0d5f0e-4a47-4a8e-9c47-0d1b5d7b2a11", "type": "heuristic",'
          b' "rule": "Pin the lockfile before a release branch is cut"}]}')


def _import(tenant: Tenant, name: str, data: bytes) -> object:
    # Into the tenant's existing project: a project created by the first import would hold up the second by itself.
    return knowledge_import(principal=tenant.principal, files=[ImportFile(name, data)],
                            project_id=str(tenant.project.id))


def _rows(tenant: Tenant) -> list[str]:
    return sorted(KnowledgeItem.objects.filter(owner=tenant.user, deleted_at__isnull=True)
                  .values_list("content", flat=True))


def test_one_file_imported_twice_at_once_stores_each_rule_once(tenant_a: Tenant, tenant_b: Tenant) -> None:
    second: list[object] = []
    errors = while_uncommitted(lambda: _import(tenant_a, "CLAUDE.md", RULES),
                               lambda: second.append(_import(tenant_a, "CLAUDE.md", RULES)))
    assert errors == []
    assert _rows(tenant_a) == ["Always run the migrations check before merging a schema change.",
                               "Never log a bearer token, not even its prefix."]
    receipts = second[0].files[0].rules  # type: ignore[attr-defined]
    assert [r.status for r in receipts] == ["skipped", "skipped"]
    assert all(r.reason.startswith("already in the brain") for r in receipts)
    # Another owner importing the same file at the same moment is neither held up nor merged into tenant A's rows.
    assert while_uncommitted(lambda: _import(tenant_a, "AGENTS.md", RULES + b"- One more rule for tenant A only.\n"),
                             lambda: _import(tenant_b, "CLAUDE.md", RULES)) == []
    assert len(_rows(tenant_b)) == 2 and len(_rows(tenant_a)) == 3


def test_one_export_restored_twice_at_once_restores_each_row_once(tenant_a: Tenant, tenant_b: Tenant) -> None:
    assert while_uncommitted(lambda: _import(tenant_a, "export.json", EXPORT),
                             lambda: _import(tenant_a, "export.json", EXPORT)) == []
    assert _rows(tenant_a) == ["Pin the lockfile before a release branch is cut"]
    assert _rows(tenant_b) == []


def test_two_absorbs_of_one_rule_at_once_store_it_once(tenant_a: Tenant) -> None:
    # The same learning from two sessions that end together: the second finds the first's row and reinforces it.
    draft = KnowledgeDraft(content="Run the flaky payment test alone before blaming the fixture", type="heuristic")
    assert while_uncommitted(lambda: knowledge_absorb(owner=tenant_a.user, drafts=[(None, draft)]),
                             lambda: knowledge_absorb(owner=tenant_a.user, drafts=[(None, draft)])) == []
    row = KnowledgeItem.objects.get(owner=tenant_a.user)
    assert row.success_count == 1
