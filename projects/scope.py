"""The caller of a request: a user, optionally narrowed to one project by a project-scoped token."""

from __future__ import annotations

from dataclasses import dataclass

from projects.models import ApiToken, Project, User


@dataclass(frozen=True)
class Principal:
    user: User
    token: ApiToken | None = None

    @property
    def token_project(self) -> Project | None:
        return self.token.project if self.token is not None else None

    @property
    def is_project_scoped(self) -> bool:
        return self.token is not None and self.token.project_id is not None
