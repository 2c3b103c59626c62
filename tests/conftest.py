"""Test setup: a real PostgreSQL with pgvector (the embedded server, or DATABASE_URL) per run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from brain.broker import sends_flush
from brain.cli import prepare_database
from brain.config import runtime_config
from projects.models import ApiToken, Project, User
from projects.scope import Principal
from tests.factories import make_tenant


@pytest.fixture(scope="session")
def django_db_modify_db_settings() -> Iterator[None]:
    """Starts the embedded server (unless DATABASE_URL is set) before pytest-django creates test_brain."""
    stop = prepare_database(runtime_config())
    yield
    stop()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's test database, whose drop at the end must not meet a connection still held by a background
    thread of this process (a drain thread keeps its connection for `IDLE_CLOSE_S` after its last item)."""
    yield
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@dataclass
class Tenant:
    """A user with a personal org, one project, a user-scoped and a project-scoped token."""

    user: User
    project: Project
    user_token: ApiToken
    user_raw: str
    project_token: ApiToken
    project_raw: str

    @property
    def principal(self) -> Principal:
        return Principal(user=self.user, token=self.user_token)

    @property
    def project_principal(self) -> Principal:
        return Principal(user=self.user, token=self.project_token)


@pytest.fixture
def tenant_a(db: None) -> Tenant:
    return Tenant(**make_tenant("alice@a.example", "Alpha App"))


@pytest.fixture
def tenant_b(db: None) -> Tenant:
    """The second tenant: must never see anything of tenant_a."""
    return Tenant(**make_tenant("bob@b.example", "Bravo App"))


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """PBKDF2 is slow on purpose (~0.3 s per hash); tests need a real hash, not its cost."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _inline_knowledge_vectors(settings: Any) -> None:
    """Knowledge rows embedded before their insert, so assertions on vectors need no waiting; the batched default
    has its own tests (tests/knowledge/test_knowledge_vectors.py), which set "batched" themselves."""
    settings.BRAIN_KNOWLEDGE_VECTORS = "inline"


@pytest.fixture(autouse=True)
def _broker_sends_drained() -> Iterator[None]:
    """Jobs a test's closes queued for the sender thread go out before the next test changes the broker."""
    yield
    assert sends_flush(timeout=60)


_TOPICS = ["React forms", "Django views", "pnpm workspaces", "Python logging", "TypeScript types", "SQL migrations",
           "Tailwind styling", "pytest fixtures", "Docker images", "Git commits", "REST errors", "Celery tasks"]
_VERBS = ["Always use", "Never use", "Prefer", "Avoid", "We use", "Don't mix"]


@pytest.fixture
def small_corpus(tmp_path) -> Path:  # type: ignore[no-untyped-def]
    """A rule-file corpus in the shape of awesome_cursorrules.jsonl, so bench tests need no shared data."""
    lines = []
    for n, topic in enumerate(_TOPICS):
        bullets = "\n".join(f"- {verb} the team's standard approach for {topic.lower()} in file group {n}-{i}, "
                            f"because reviews keep flagging it" for i, verb in enumerate(_VERBS))
        lines.append(json.dumps({"id": f"set-{n}", "rule_set": topic, "text": f"# {topic}\n\n{bullets}"}))
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path
