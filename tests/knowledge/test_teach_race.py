"""The same rule taught twice at once is one row, reaffirmed by the second teach (both used to store a row)."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem
from knowledge.services.teach import Taught, knowledge_teach
from tests.conftest import Tenant
from tests.support.race import while_uncommitted

pytestmark = pytest.mark.django_db(transaction=True)
RULE = "Always run the migrations check before merging"


def test_the_same_rule_taught_twice_at_once_is_one_row(tenant_a: Tenant, tenant_b: Tenant) -> None:
    taught: list[Taught] = []
    errors = while_uncommitted(  # the first is stored, not yet committed: invisible to the second's lookup
        lambda: taught.append(knowledge_teach(principal=tenant_a.principal, type="reflex", rule=RULE)),
        lambda: taught.append(knowledge_teach(principal=tenant_a.principal, type="reflex", rule=f"  {RULE.lower()} ")))
    assert errors == []
    assert len(taught) == 2 and taught[1].repeated and taught[1].item.id == taught[0].item.id
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1
    knowledge_teach(principal=tenant_b.principal, type="reflex", rule=RULE)
    assert KnowledgeItem.objects.filter(owner=tenant_b.user).count() == 1  # the other tenant's own row
