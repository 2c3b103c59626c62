from __future__ import annotations

import pytest
from django.test import Client, override_settings


def test_healthz_is_up_without_database() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_database_pgvector_and_broker() -> None:
    body = Client().get("/readyz").json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] and body["checks"]["database"]["detail"].startswith("PostgreSQL")
    assert body["checks"]["pgvector"]["detail"].startswith("pgvector 0.")
    assert body["checks"]["broker"]["ok"]


@pytest.mark.django_db
def test_readyz_fails_when_broker_is_down() -> None:
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["ok"] is False


@pytest.mark.django_db
def test_readyz_accepts_the_real_redis() -> None:
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:6379/0"):
        response = Client().get("/readyz")
    assert response.status_code == 200, response.json()


def test_readyz_rejects_post() -> None:
    assert Client().post("/readyz").status_code == 405
