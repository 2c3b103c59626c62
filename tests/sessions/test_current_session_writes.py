"""A Cognibrain write whose current session closed between finding it and writing to it goes into the next
current session: a task memory never lands in a closed session (where nothing would ever drop it), nor does an
event land after the close scored the session."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeItem
from sessions.models import Session, SessionEvent
from sessions.services.cognibrain import memory_add, outcome_record
from sessions.services.current import (
    CurrentSessionEnded,
    in_current_session,
    session_current,
    session_current_end,
    task_tag,
)
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db


def test_a_write_into_a_session_closed_meanwhile_goes_to_the_next_one(tenant_a: Tenant, tenant_b: Tenant) -> None:
    principal = tenant_a.principal
    first = session_current(principal=principal)
    theirs = session_current(principal=tenant_b.principal)
    used: list[Session] = []

    def closed_under_it(session: Session) -> object:
        used.append(session)
        if len(used) == 1:  # the close lands between finding the session and writing to it
            session_current_end(principal=principal, session=session)
        return memory_add(principal=principal, session=session, content="Use the staging database here", scope="task")

    added = in_current_session(principal, closed_under_it)
    second = used[-1]
    assert [s.id for s in used] == [first.id, second.id] and second.id != first.id
    row = KnowledgeItem.objects.get(pk=added.id)
    assert row.tags == [task_tag(second)] and row.deleted_at is None
    assert not KnowledgeItem.objects.filter(tags__contains=[task_tag(first)]).exists()
    with pytest.raises(CurrentSessionEnded):
        outcome_record(session=first, command="npm test", exit_code=1, stderr="boom")
    assert not SessionEvent.objects.filter(session=first, payload__kind="command_outcome").exists()
    assert Session.objects.get(pk=theirs.pk).ended_at is None
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()
