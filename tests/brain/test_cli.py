from __future__ import annotations

import os
import signal
import subprocess

import pytest

from brain import embedded_db
from brain.db_url import connection_url
from projects.models import ApiToken, User
from projects.selectors.accounts import token_digest
from tests.support.proc import BRAIN, run_brain

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def db_env() -> dict[str, str]:
    return {"DATABASE_URL": connection_url()}


def test_user_then_token_prints_a_token_stored_only_as_digest(db_env) -> None:
    created = run_brain("user", "create", "--email", "Dana@Example.com", "--password", "pw-abcdef", env=db_env)
    assert created.returncode == 0, created.stderr
    user = User.objects.get(email="dana@example.com")
    minted = run_brain("token", "create", "--email", "dana@example.com", "--name", "laptop", env=db_env)
    assert minted.returncode == 0, minted.stderr
    raw = minted.stdout.strip()
    assert raw.count("\n") == 0 and raw.startswith("ebt_")
    token = ApiToken.objects.get(user=user)
    assert token.digest == token_digest(raw) and token.label == "laptop" and token.project is None
    assert not ApiToken.objects.filter(digest=raw).exists()


def test_project_scoped_token(db_env, tenant_a) -> None:
    minted = run_brain("token", "create", "--email", tenant_a.user.email, "--project", "alpha app", env=db_env)
    assert minted.returncode == 0, minted.stderr
    assert ApiToken.objects.get(digest=token_digest(minted.stdout.strip())).project == tenant_a.project


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("token", "create", "--email", "ghost@example.com"), "no user with e-mail"),
        (("token", "create", "--email", "alice@a.example", "--project", "Bravo App"), "has no project named"),
        (("user", "create", "--email", "not-an-email"), "not a valid e-mail"),
        (("user", "create", "--email", "alice@a.example"), "already exists"),
        # argv that is not valid UTF-8 arrives as lone surrogates: the core's text rule, not a traceback
        (("token", "create", "--email", "alice@a.example", "--name", "lap\udcfftop"), "label must be valid Unicode"),
        (("token", "create", "--email", "alice@a.example", "--project", "Alpha\udcff"), "project must be valid"),
        (("token", "create", "--email", "alice\udcff@a.example"), "email must be valid Unicode"),
        (("token", "revoke", "--email", "alice@a.example", "--prefix", "ebt_\udcff"), "prefix must be valid"),
    ],
)
def test_bad_input_is_one_line_nonzero_and_changes_nothing(db_env, tenant_a, tenant_b, args, message) -> None:
    before = (User.objects.count(), ApiToken.objects.count())
    result = run_brain(*args, env=db_env)
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
    assert (User.objects.count(), ApiToken.objects.count()) == before


def test_token_revoke_by_prefix(db_env, tenant_a) -> None:
    result = run_brain("token", "revoke", "--email", tenant_a.user.email, "--prefix", tenant_a.user_token.prefix,
                       env=db_env)
    assert result.returncode == 0, result.stderr
    assert ApiToken.objects.get(pk=tenant_a.user_token.pk).revoked_at is not None
    assert ApiToken.objects.get(pk=tenant_a.project_token.pk).revoked_at is None


def test_doctor_reports_each_dependency(db_env) -> None:
    result = run_brain("doctor", env=db_env)
    names = [line.split()[1] for line in result.stdout.splitlines()]
    assert names == ["database", "pgvector", "broker", "embedder", "vectors", "migrations", "indexes", "guard",
                     "scopes"]
    assert result.returncode == 0, result.stdout


def test_doctor_names_a_drifted_scope_size_and_recount_mends_it(db_env, tenant_a, tenant_b) -> None:
    from knowledge.models import ScopeRows
    from knowledge.services.create import KnowledgeDraft, knowledge_create_many

    for tenant in (tenant_a, tenant_b):
        knowledge_create_many(owner=tenant.user, project=tenant.project,
                              drafts=[KnowledgeDraft(f"Deploy service {n} through the pipeline") for n in range(3)])
    mine, theirs = (f"project:{tenant.project.id}" for tenant in (tenant_a, tenant_b))
    ScopeRows.objects.filter(scope=mine).update(rows=7)  # what a restore past the triggers leaves
    doctor = run_brain("doctor", env=db_env)
    assert doctor.returncode == 1
    (line,) = [line for line in doctor.stdout.splitlines() if line.split()[1] == "scopes"]
    assert line.startswith("FAIL") and "1 scope(s)" in line and "brain knowledge recount" in line
    recount = run_brain("knowledge", "recount", env=db_env)
    assert recount.returncode == 0 and recount.stdout.strip() == "corrected 1 scope(s)", recount.stderr
    assert dict(ScopeRows.objects.filter(scope__in=[mine, theirs]).values_list("scope", "rows")) == {mine: 3, theirs: 3}
    assert run_brain("doctor", env=db_env).returncode == 0


def test_wrong_database_url_is_one_clear_line() -> None:
    result = run_brain("doctor", env={"DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing"})
    assert result.returncode == 1
    assert result.stderr.strip().startswith("brain: cannot connect to DATABASE_URL")
    assert len(result.stderr.strip().splitlines()) == 1


def test_server_without_pgvector_is_refused_with_the_fix() -> None:
    # The machine's own PostgreSQL 15 has no pgvector.
    result = run_brain("doctor", env={"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres"})
    assert result.returncode == 1
    assert "has no pgvector extension" in result.stderr and "unset DATABASE_URL" in result.stderr


def test_manage_passes_through() -> None:
    result = run_brain("manage", "check")
    assert result.returncode == 0 and "no issues" in result.stdout


def test_commands_work_on_a_fresh_data_dir(tmp_path) -> None:
    """`brain user create` before any `brain serve`: migrations are applied first, then the user exists."""
    env = {"BRAIN_DATA_DIR": str(tmp_path / "fresh"), "DATABASE_URL": ""}
    created = run_brain("user", "create", "--email", "first@example.com", env=env)
    assert created.returncode == 0, created.stderr
    assert "applying" in created.stderr and "created user first@example.com" in created.stdout
    minted = run_brain("token", "create", "--email", "first@example.com", env=env)
    assert minted.returncode == 0 and minted.stdout.startswith("ebt_")
    doctor = run_brain("doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout


def test_sigterm_stops_the_database_the_command_started(tmp_path) -> None:
    """A command stopped with SIGTERM (a supervisor, `timeout`, `kill`) runs its cleanup as after Ctrl-C: the
    embedded database it started is stopped, not left running without its owner."""
    data_dir = tmp_path / "fresh"
    env = {**os.environ, "BRAIN_DATA_DIR": str(data_dir), "DATABASE_URL": ""}
    wait = "import time; print('ready', flush=True); time.sleep(120)"
    server = embedded_db.server_for(data_dir / "pg")
    proc = subprocess.Popen([BRAIN, "manage", "shell", "-c", wait], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "ready\n" in iter(proc.stdout.readline, "")
        assert embedded_db.is_running(server)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        assert not embedded_db.is_running(server)
    finally:
        proc.kill()
        proc.wait()
        if embedded_db.is_running(server):
            embedded_db.stop(server)


def test_a_command_stores_the_vectors_it_queued_before_it_stops_its_database(tmp_path) -> None:
    """Knowledge taught from a command gets its vector from the batcher's thread after the commit; the command
    waits for it before stopping the embedded database it started, instead of leaving the batch to fail."""
    env = {"BRAIN_DATA_DIR": str(tmp_path / "fresh"), "DATABASE_URL": ""}
    assert run_brain("manage", "migrate", env=env).returncode == 0
    teach = ("from knowledge.services.create import KnowledgeDraft, knowledge_create; "
             "from projects.services.accounts import user_create; "
             "knowledge_create(owner=user_create(email='cli@example.com'), project=None, "
             "draft=KnowledgeDraft('Run the migrations before the tests'), defer_vectors=True)")
    taught = run_brain("manage", "shell", "-c", teach, env=env)
    assert taught.returncode == 0, taught.stderr
    assert "batch_failed" not in taught.stderr
    count = ("from knowledge.models import KnowledgeItem; "
             "print(KnowledgeItem.objects.filter(embedding__isnull=False).count())")
    counted = run_brain("manage", "shell", "-c", count, env=env)
    assert counted.stdout.strip().splitlines()[-1] == "1", counted.stderr
