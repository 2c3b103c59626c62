"""Over a live server with the `mcp` package's client and the real vector batcher: a rule taught with
brain_teach_knowledge is injected by the brain_start_session that follows at once, before the batcher has
embedded it. The second tenant, teaching the same words, gets its own rule and never the first one's."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from knowledge.models import KnowledgeItem
from knowledge.services import vector_batcher
from knowledge.services.knowledge_vectors import KNOWLEDGE_BATCHER
from sessions.services.event_vectors import EVENT_BATCHER
from tests.conftest import Tenant
from tests.mcpgw.test_brain_day import call, connect

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
RULE = {"trigger": "writing pydantic validators", "rule": "use field_validator with mode='after'", "type": "reflex"}
PROMPT = "add a pydantic validator for the signup form"


@pytest.fixture
def batcher_held(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Vectors from the batcher, which gathers for two seconds: the open below always comes before it runs."""
    settings.BRAIN_KNOWLEDGE_VECTORS = "batched"
    monkeypatch.setattr(vector_batcher, "GATHER_SECONDS", 2.0)
    yield
    # Before the tables go: the rule's batch finds nothing left to embed, the session's prompt event gets its vector.
    assert KNOWLEDGE_BATCHER.flush(timeout=60) and EVENT_BATCHER.flush(timeout=60)


async def teach_then_open(url: str, tenant: Tenant) -> tuple[str, dict[str, Any], bool]:
    async with connect(url, tenant.user_raw) as client:
        taught = (await call(client, "brain_teach_knowledge", RULE))["id"]
        pending = await anyio.to_thread.run_sync(
            lambda: KnowledgeItem.objects.filter(id=taught, embedding__isnull=True).exists())
        opened = await call(client, "brain_start_session", {"prompt": PROMPT})
        return taught, opened, pending


def test_a_rule_taught_just_before_the_open_is_injected(live_server: Any, tenant_a: Tenant, tenant_b: Tenant,
                                                        batcher_held: None) -> None:
    mine, opened, pending = anyio.run(teach_then_open, live_server.url, tenant_a)
    assert pending  # the open below came while the rule still waited for its vector
    assert opened["relevantKnowledge"]["knowledgeIds"] == [mine], opened.get("injectionNotice")
    assert KnowledgeItem.objects.filter(id=mine, embedding__isnull=False).exists()

    theirs, other, _ = anyio.run(teach_then_open, live_server.url, tenant_b)
    assert other["relevantKnowledge"]["knowledgeIds"] == [theirs]
    assert KnowledgeItem.objects.get(id=theirs).owner_id == tenant_b.user.id
