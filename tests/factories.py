"""factory-boy factories built on the services, so test data obeys the same rules as real data."""

from __future__ import annotations

from typing import Any

import factory

from projects.models import Project, User
from projects.services.accounts import project_ensure_named, token_create, user_create


class UserFactory(factory.Factory):
    class Meta:
        model = User

    email = factory.Sequence(lambda n: f"user{n}@example.test")
    password = "correct horse battery staple"
    is_staff = False

    @classmethod
    def _create(cls, model_class: type[User], *args: Any, **kwargs: Any) -> User:
        return user_create(**kwargs)


class ProjectFactory(factory.Factory):
    class Meta:
        model = Project

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Project {n}")
    framework = "django"
    language = "python"

    @classmethod
    def _create(cls, model_class: type[Project], *args: Any, **kwargs: Any) -> Project:
        project, _ = project_ensure_named(**kwargs)
        return project


def make_tenant(email: str, project_name: str) -> dict[str, Any]:
    user = UserFactory(email=email)
    project = ProjectFactory(user=user, name=project_name)
    user_token, user_raw = token_create(user=user, label="laptop")
    project_token, project_raw = token_create(user=user, project=project, label="ci")
    return {
        "user": user, "project": project, "user_token": user_token, "user_raw": user_raw,
        "project_token": project_token, "project_raw": project_raw,
    }
