"""A team org for review and attribution tests: an owner (tenant_a's user), a member who joined by invitation, and
one shared project. tenant_b stays the outsider who must see nothing of it."""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.services.teach import Taught, knowledge_teach
from projects.models import ApiToken, Org, Project, User
from projects.scope import Principal
from projects.services.accounts import project_ensure_named, token_create
from projects.services.orgs import invitation_accept, invitation_create, org_create
from tests.conftest import Tenant
from tests.factories import UserFactory


@dataclass
class Team:
    org: Org
    project: Project
    owner: Principal
    owner_raw: str
    member: Principal
    member_raw: str

    def teach(self, who: Principal, rule: str, **kwargs: object) -> Taught:
        return knowledge_teach(principal=who, rule=rule, project_id=str(self.project.id), **kwargs)  # type: ignore[arg-type]


def make_team(owner: Tenant) -> Team:
    org = org_create(user=owner.user, name="Delta Team")
    member: User = UserFactory(email="mo@delta.example")
    member.display_name = "Mo Member"
    member.save(update_fields=["display_name"])
    _, raw_invite = invitation_create(user=owner.user, org=org, email=member.email)
    invitation_accept(user=member, raw=raw_invite)
    project, _ = project_ensure_named(user=owner.user, name="Shared Service", org=org)
    member_token, member_raw = token_create(user=member, label="mo laptop")
    return Team(org=org, project=project, owner=owner.principal, owner_raw=owner.user_raw,
                member=Principal(user=member, token=member_token), member_raw=member_raw)


def token_of(principal: Principal) -> ApiToken:
    assert principal.token is not None
    return principal.token
