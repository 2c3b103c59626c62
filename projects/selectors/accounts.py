"""Reads of accounts and projects, always narrowed to what the caller may see."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Case, CharField, IntegerField, Model, QuerySet, Value, When
from django.db.models.functions import Lower
from django.utils import timezone

from brain.errors import NotFound, ValidationFailed
from brain.sql_rows import execute_prepared, instances, select_list
from brain.text import text_storable
from projects.models import TOKEN_PREFIX, ApiToken, Membership, Org, Project, User
from projects.scope import Principal


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def user_by_email(*, email: str) -> User:
    text_storable(email=email)
    user = User.objects.filter(email=email.strip().lower()).first()
    if user is None:
        raise NotFound(f"no user with e-mail {email.strip()!r}; create one with `brain user create --email`")
    return user


def password_stamp(*, email: str) -> str:
    """The stored password hash of the account with this address ("" when there is none), which a sign-in's
    known-browser cookie is bound to."""
    return User.objects.filter(email=email.strip().lower()).values_list("password", flat=True).first() or ""


def personal_org(*, user: User) -> Org:
    return Org.objects.get(personal_for=user)


def orgs_of(*, user: User) -> QuerySet[Org]:
    return Org.objects.filter(memberships__user=user)


def projects_visible(*, principal: Principal) -> QuerySet[Project]:
    """Projects the caller can see: the token's project only, or every project of the user's orgs.

    Ordered personal org first, then by creation (the "first project" fallback uses this order).
    """
    token_project_id = principal.token.project_id if principal.token else None
    if token_project_id is not None:
        qs = Project.objects.filter(id=token_project_id, org__memberships__user=principal.user)
    else:
        qs = Project.objects.filter(org__memberships__user=principal.user)
    own_first = Case(
        When(org__personal_for=principal.user, then=Value(0)), default=Value(1), output_field=IntegerField()
    )
    return qs.select_related("org").annotate(own_rank=own_first).order_by("own_rank", "created_at", "id")


def visible_project_sql(alias: str, *, user: str = "%(user)s", project: str = "%(project)s::uuid") -> str:
    """projects_visible's scope as a SQL condition on the project row `alias`, for statements written once per
    process: a project of one of the user's orgs (`user`), and only the token's own project when the token
    is scoped (`project`, NULL for a user-scoped token). By default both are the parameters of
    `visible_project_params`; a statement that reads them from another row passes its column expressions."""
    membership = Membership._meta.db_table
    exists = f'SELECT 1 FROM "{membership}" AS m WHERE m.org_id = {alias}.org_id AND m.user_id = {user}'  # noqa: S608
    return f"EXISTS ({exists}) AND ({project} IS NULL OR {alias}.id = {project})"


def visible_project_params(principal: Principal) -> dict[str, Any]:
    return {"user": principal.user.pk, "project": principal.token.project_id if principal.token else None}


# The row layout of a listed project (each with its org), for statements that read the list.
LISTED: tuple[tuple[str, type[Model]], ...] = (("p", Project), ("o", Org))


def listed_sql(*, user: str = "%(user)s", project: str = "%(project)s::uuid") -> tuple[str, str]:
    """(FROM ... WHERE, ORDER BY) of the visible projects in projects_visible's order (personal org first, then
    by creation), over the aliases of LISTED; `user` and `project` as in visible_project_sql."""
    p, o = Project._meta.db_table, Org._meta.db_table
    visible = visible_project_sql("p", user=user, project=project)
    source = f'FROM "{p}" AS p JOIN "{o}" AS o ON o.id = p.org_id WHERE {visible}'
    return source, f"CASE WHEN o.personal_for_id = {user} THEN 0 ELSE 1 END, p.created_at, p.id"


def project_listed(row: Sequence[Any]) -> Project:
    """One project with its `.org` from a row laid out by select_list(LISTED)."""
    built = instances(row, LISTED)
    project, org = built["p"], built["o"]
    assert isinstance(project, Project) and isinstance(org, Org)
    project.org = org
    return project


@cache
def _listed_statement() -> str:
    source, order = listed_sql()
    # Names come from the models, values are parameters.
    return f"SELECT {select_list(LISTED)} {source} ORDER BY {order} LIMIT %(limit)s"


def projects_listed(*, principal: Principal, limit: int | None = None) -> list[Project]:
    """What projects_visible yields (each project with its `.org`), as one precompiled statement: the form for
    per-call reads (brain_list_projects, the default project of a session). When the call's authentication
    already read the list (`principal.listed`, see mcpgw.session_call), that list is used."""
    if principal.listed is not None:
        return list(principal.listed[:limit])
    if principal.listed_first is not None and limit == 1:
        return list(principal.listed_first)
    params = {**visible_project_params(principal), "limit": limit}
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_projects_listed", _listed_statement(), params)
        return [project_listed(row) for row in cursor.fetchall()]


def visible_project_ids(*, principal: Principal) -> list[uuid.UUID]:
    """The ids of projects_visible, read by the list's prepared statement (or taken from the list the call's
    authentication read): a search over every visible project spent 1.7 ms building the ORM's query for them."""
    return [project.pk for project in projects_listed(principal=principal)]


def projects_first(*, principal: Principal) -> Project | None:
    """The first visible project in projects_visible's order (a token's own project, or the personal org's oldest)."""
    listed = projects_listed(principal=principal, limit=1)
    return listed[0] if listed else None


def project_visible(*, principal: Principal, project_id: uuid.UUID | str) -> Project:
    """One visible project; a missing project and a hidden one give the same NOT_FOUND."""
    try:
        pk = uuid.UUID(str(project_id))
    except ValueError:
        raise NotFound(f"project {project_id} not found") from None
    if principal.listed is not None:  # the call's authentication read the visible projects already
        project = next((listed for listed in principal.listed if listed.pk == pk), None)
    else:
        with connection.cursor() as cursor:
            params = {**visible_project_params(principal), "pk": pk}
            execute_prepared(cursor, "brain_project_visible", _visible_statement(), params)
            row = cursor.fetchone()
        project = project_listed(row) if row else None
    if project is None:
        raise NotFound(f"project {project_id} not found")
    return project


@cache
def _visible_statement() -> str:
    """One project of projects_visible by its id, with its org, as a prepared statement: the ORM built the query on
    every call: 1.9 ms of a knowledge search in one project at 100,000 rows, 0.4 ms prepared (docs/benchmarks.md,
    issue 17, eighteenth pass)."""
    source, _ = listed_sql()
    return f"SELECT {select_list(LISTED)} {source} AND p.id = %(pk)s::uuid"  # names from the models only


def project_active(*, principal: Principal) -> tuple[Project | None, str | None]:
    """The project a session would default to, without creating one: the token's project
    ("token_scope") or the first visible one ("first_project_fallback"); (None, None) if there is none."""
    project = projects_first(principal=principal)
    if project is None:
        return None, None
    return project, "token_scope" if principal.is_project_scoped else "first_project_fallback"


def project_of_user_named(*, user: User, name: str) -> Project | None:
    """A project of any of the user's orgs whose name matches `name` case-insensitively."""
    text_storable(project=name)
    return Project.objects.filter(org__memberships__user=user, name__iexact=name).first()


def project_in_org_by_name(*, org: Org, name: str) -> Project | None:
    # Lowered by the database on both sides, as the unique constraint is: Python's str.lower() and PostgreSQL's
    # lower() disagree on some letters ("İ" gives "i̇" in Python, "i" in PostgreSQL), and a miss here means an
    # insert that the constraint refuses.
    lowered = Project.objects.filter(org=org).annotate(lname=Lower("name"))
    return lowered.filter(lname=Lower(Value(name, output_field=CharField()))).first()


_TOKEN = (("t", ApiToken), ("u", User), ("p", Project))


@cache
def _token_statement() -> str:
    token, user, project = (model._meta.db_table for _, model in _TOKEN)
    return f"""SELECT {select_list(_TOKEN)} FROM "{token}" AS t JOIN "{user}" AS u ON u.id = t.user_id
        LEFT JOIN "{project}" AS p ON p.id = t.project_id
        WHERE t.digest = %(digest)s AND u.is_active LIMIT 1"""  # noqa: S608


def token_for_raw(*, raw: str) -> ApiToken | None:
    """The usable token for a raw bearer value (with its `.user` and `.project`), or None (unknown, revoked,
    expired, inactive user). Every stateless-era MCP call and every REST call starts here, so it is one
    statement prepared per connection."""
    with connection.cursor() as cursor:
        execute_prepared(cursor, "brain_token_for_raw", _token_statement(), {"digest": token_digest(raw)})
        row = cursor.fetchone()
    if row is None:
        return None
    token = token_joined(instances(row, _TOKEN))
    return token if token.is_usable(timezone.now()) else None


def token_joined(built: dict[str, Model | None]) -> ApiToken:
    """The token `t` of a row read with its user `u` and (LEFT JOIN) project `p`, with both attached."""
    token, user = built["t"], built["u"]
    assert isinstance(token, ApiToken) and isinstance(user, User)
    token.user = user
    token.project = built["p"]  # type: ignore[assignment]  # None for a user-scoped token, as the FK allows
    return token


TOKENS_PAGE = 50  # rows of the /settings/tokens list; revoked and expired tokens stay listed, so it only grows


def tokens_of(*, user: User) -> QuerySet[ApiToken]:
    """The user's tokens, newest first; the id breaks ties so a page boundary never skips or repeats one."""
    return ApiToken.objects.filter(user=user).select_related("project").order_by("-created_at", "-id")


PREFIX_MIN = 8  # characters a typed prefix needs, `ebt_` counted when given


def token_of_user_by_prefix(*, user: User, prefix: str) -> ApiToken | None:
    """One of the user's tokens by its prefix as shown anywhere: with or without `ebt_`, shortened (at least
    PREFIX_MIN characters), with a trailing ellipsis, or the whole raw token. Two matches are a VALIDATION error."""
    text_storable(prefix=prefix)
    typed = prefix.strip().rstrip("…").rstrip(".")
    public = typed.removeprefix(TOKEN_PREFIX).split("_")[0].lower()
    if len(typed) < PREFIX_MIN or not public or any(c not in "0123456789abcdef" for c in public):
        raise ValidationFailed(f"{prefix!r} is not a token prefix: give at least {PREFIX_MIN} characters of it as "
                               f"`brain token list` shows it, e.g. {TOKEN_PREFIX}1a2b3c4d")
    found = list(tokens_of(user=user).filter(prefix__startswith=TOKEN_PREFIX + public)[:10])
    if len(found) > 1:
        raise ValidationFailed(f"{prefix!r} matches {len(found)} tokens ({', '.join(t.prefix for t in found)}): "
                               "give more characters")
    return found[0] if found else None
