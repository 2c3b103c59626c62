"""A user holds at most MAX_TOKENS_PER_USER usable tokens; revoked and expired ones do not count, and
one user's tokens never count against another's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from brain.errors import Conflict
from projects.models import ApiToken
from projects.services.accounts import token_create, token_revoke
from tests.conftest import Tenant
from tests.support.api import api_error, bearer

pytestmark = pytest.mark.django_db


def test_the_token_cap_counts_usable_tokens_per_user(
    tenant_a: Tenant, tenant_b: Tenant, settings: Any
) -> None:
    settings.MAX_TOKENS_PER_USER = 4  # each tenant starts with 2
    extra, _ = token_create(user=tenant_a.user, label="third")
    token_create(user=tenant_a.user, label="fourth")
    with pytest.raises(Conflict, match="BRAIN_MAX_TOKENS_PER_USER=4"):
        token_create(user=tenant_a.user, label="fifth")
    err = api_error(bearer(tenant_a.user_raw).post("/api/v1/tokens", {"label": "fifth"},
                                                   content_type="application/json"), 409, "CONFLICT")
    assert err["details"] == {"activeTokens": 4, "cap": 4}
    assert not ApiToken.objects.filter(label="fifth").exists()
    token_create(user=tenant_b.user, label="bob's third")  # another user's count is their own
    token_revoke(user=tenant_a.user, token_id=extra.id)
    token_create(user=tenant_a.user, label="after a revoke")
    ApiToken.objects.filter(label="after a revoke").update(expires_at=timezone.now() - timedelta(seconds=1))
    token_create(user=tenant_a.user, label="after an expiry")
