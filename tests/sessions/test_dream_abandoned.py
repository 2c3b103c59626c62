"""A dream run that ages past the re-send window with a job unfinished is stamped and logged once: its work falls
to the scope's next cycle, and the operator can see that it did."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from knowledge.guard_models import DreamRun
from sessions.services.dream import dream_runs_requeue
from tests.conftest import Tenant
from tests.mcpgw.conftest import ops

pytestmark = pytest.mark.django_db


def _run(tenant: Tenant, age: timedelta, *, finished: bool) -> DreamRun:
    created = timezone.now() - age
    done = created + timedelta(minutes=1) if finished else None
    run = DreamRun.objects.create(owner=tenant.user, scope=f"project:{tenant.project.id}", reason="writes",
                                  enqueued_at=created, evolved_at=done, decayed_at=done, crossed_at=created)
    DreamRun.objects.filter(pk=run.pk).update(created_at=created)
    return run


def test_aged_unfinished_runs_are_stamped_and_logged_once(caplog: pytest.LogCaptureFixture, tenant_a: Tenant,
                                                          tenant_b: Tenant) -> None:
    lost_a = _run(tenant_a, timedelta(minutes=70), finished=False)
    lost_b = _run(tenant_b, timedelta(minutes=90), finished=False)
    finished = _run(tenant_a, timedelta(minutes=80), finished=True)
    ancient = _run(tenant_a, timedelta(days=3), finished=False)
    recent = _run(tenant_b, timedelta(minutes=10), finished=True)

    assert dream_runs_requeue() == 0
    stamped = set(DreamRun.objects.filter(abandoned_at__isnull=False).values_list("pk", flat=True))
    assert stamped == {lost_a.pk, lost_b.pk}
    assert not {finished.pk, ancient.pk, recent.pk} & stamped
    [line] = ops(caplog, "dream.runs_abandoned")
    assert line["count"] == 2 and set(line["scopes"].split(",")) == {lost_a.scope, lost_b.scope}

    caplog.clear()
    assert dream_runs_requeue() == 0
    assert ops(caplog, "dream.runs_abandoned") == []
