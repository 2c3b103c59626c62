"""`brain token list`, `brain token revoke --prefix` as shown anywhere, and `brain user create` passwords."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from brain.db_url import connection_url
from projects.models import ApiToken, User
from projects.services.accounts import token_create, token_revoke
from tests.support.proc import run_brain

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def db_env() -> dict[str, str]:
    return {"DATABASE_URL": connection_url()}


def test_token_list_shows_each_token_of_that_user_only(db_env, tenant_a, tenant_b) -> None:
    token_revoke(user=tenant_a.user, token_id=tenant_a.project_token.pk)
    result = run_brain("token", "list", "--email", tenant_a.user.email, env=db_env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["prefix", "name", "project", "created", "last", "used", "revoked"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {tenant_a.user_token.prefix, tenant_a.project_token.prefix}
    assert "(all projects)" in rows[tenant_a.user_token.prefix] and rows[tenant_a.user_token.prefix].endswith("-")
    assert "Alpha App" in rows[tenant_a.project_token.prefix]
    assert not rows[tenant_a.project_token.prefix].endswith("-")  # the revoke time is shown
    assert tenant_b.user_token.prefix not in result.stdout


def test_token_list_of_a_user_without_tokens_says_how_to_mint(db_env) -> None:
    run_brain("user", "create", "--email", "empty@e.example", "--password", "a fine long password 9", env=db_env)
    result = run_brain("token", "list", "--email", "empty@e.example", env=db_env)
    assert result.returncode == 0 and "brain token create --email empty@e.example" in result.stdout


@pytest.mark.parametrize("shown", [
    lambda p, raw: p,                      # as listed: ebt_1a2b3c4d
    lambda p, raw: p + "…",                # as the tokens page shows it
    lambda p, raw: p.removeprefix("ebt_"),  # without ebt_
    lambda p, raw: p[:8],                  # shortened to 8 characters: ebt_1a2b
    lambda p, raw: p.upper().replace("EBT_", "ebt_"),
    lambda p, raw: raw,                    # the whole token pasted
])
def test_revoke_accepts_the_prefix_as_shown_anywhere(db_env, tenant_a, tenant_b, shown) -> None:
    token, raw = token_create(user=tenant_a.user, label="cli")
    result = run_brain("token", "revoke", "--email", tenant_a.user.email, "--prefix", shown(token.prefix, raw),
                       env=db_env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"revoked {token.prefix}"
    assert ApiToken.objects.filter(revoked_at__isnull=False).get() == token  # nothing else revoked


def test_revoke_refuses_short_ambiguous_and_foreign_prefixes(db_env, tenant_a, tenant_b) -> None:
    first, _ = token_create(user=tenant_a.user, label="one")
    second, _ = token_create(user=tenant_a.user, label="two")
    ApiToken.objects.filter(pk=second.pk).update(prefix=first.prefix[:9] + "fff")  # the same first 5 hex
    cases = {
        first.prefix[:7]: "give at least 8 characters",
        first.prefix[:9]: "matches 2 tokens",
        "ebt_zzzzzzzz": "is not a token prefix",
        tenant_b.user_token.prefix: "has no token with prefix",
    }
    for typed, message in cases.items():
        result = run_brain("token", "revoke", "--email", tenant_a.user.email, "--prefix", typed, env=db_env)
        assert result.returncode == 1 and message in result.stderr, (typed, result.stderr)
    assert not ApiToken.objects.filter(revoked_at__isnull=False).exists()


@pytest.mark.parametrize(("password", "message"), [
    ("123", "too short"), ("password123", "too common"), ("weakling@w.example", "too similar"),
])
def test_user_create_applies_the_sign_up_password_rules(db_env, tenant_a, password, message) -> None:
    result = run_brain("user", "create", "--email", "weakling@w.example", "--password", password, env=db_env)
    assert result.returncode == 1 and message in result.stderr and result.stdout == ""
    assert not User.objects.filter(email="weakling@w.example").exists()


def test_user_create_without_password_prints_a_working_one_once(db_env, tenant_a) -> None:
    result = run_brain("user", "create", "--email", "gen@g.example", env=db_env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "created user gen@g.example" and lines[1].startswith("password (shown only now")
    password = lines[1].rsplit(" ", 1)[1]
    user = User.objects.get(email="gen@g.example")
    # The child process hashes with the production hasher (this test process may use a faster one)
    assert user.password.startswith("pbkdf2_sha256$") and PBKDF2PasswordHasher().verify(password, user.password)
    assert password not in user.password
