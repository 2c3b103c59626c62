"""The same rule taught twice at once is one row, reaffirmed by the second teach (both used to store a row)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from knowledge.models import KnowledgeItem
from knowledge.services.teach import Taught, knowledge_teach
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db(transaction=True)
RULE = "Always run the migrations check before merging"


def test_the_same_rule_taught_twice_at_once_is_one_row(tenant_a: Tenant, tenant_b: Tenant) -> None:
    inside, release = threading.Event(), threading.Event()
    taught: list[Taught] = []

    def first() -> None:
        try:
            with transaction.atomic():  # stored, not yet committed: invisible to the second teach's lookup
                taught.append(knowledge_teach(principal=tenant_a.principal, type="reflex", rule=RULE))
                inside.set()
                release.wait(10)
        finally:
            connection.close()

    def second() -> None:
        try:
            taught.append(knowledge_teach(principal=tenant_a.principal, type="reflex", rule=f"  {RULE.lower()} "))
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert inside.wait(10)
    two = threading.Thread(target=second)
    two.start()
    two.join(0.5)  # waits for the first teach's turn
    release.set()
    one.join(10)
    two.join(10)
    assert len(taught) == 2 and taught[1].repeated and taught[1].item.id == taught[0].item.id
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == 1
    knowledge_teach(principal=tenant_b.principal, type="reflex", rule=RULE)
    assert KnowledgeItem.objects.filter(owner=tenant_b.user).count() == 1  # the other tenant's own row
