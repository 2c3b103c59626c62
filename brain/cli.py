"""The `brain` command line.

Commands that need the database start the embedded PostgreSQL first when DATABASE_URL is unset (and
stop it again if they started it). Commands of other apps are listed here by dotted path and imported
only when run, so this module depends on no app.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from brain.config import RuntimeConfig, runtime_config
from brain.errors import BrainError, StartupError

Handler = Callable[[argparse.Namespace], int]

# (command words, dotted path of "configure(parser) / run(args)" module, needs the database)
COMMANDS: list[tuple[tuple[str, ...], str, bool]] = [
    (("serve",), "brain.serve", False),
    (("doctor",), "brain.doctor", True),
    (("user", "create"), "projects.cli_user", True),
    (("token", "create"), "projects.cli_token", True),
    (("token", "revoke"), "projects.cli_token_revoke", True),
    (("jobs", "run"), "sessions.cli_jobs", True),
    (("bench", "jobs"), "bench.jobs", True),
    (("bench", "tools"), "bench.tools", True),
    (("bench", "retrieval"), "bench.retrieval", True),
    (("bench", "retrieval-scale"), "bench.scale", True),
    (("bench", "dashboard"), "bench.dashboard", True),
    (("embeddings", "backfill"), "sessions.cli_embeddings", True),
    (("mcp", "stdio"), "mcpgw.stdio", False),
    (("bench", "mcp"), "bench.mcp_load", False),
]


def _fail(message: str) -> int:
    print(f"brain: {message}", file=sys.stderr)
    return 1


def require_pgvector(database_url: str) -> None:
    """An external server without pgvector cannot run the brain: say so in one line."""
    import psycopg

    try:
        with psycopg.connect(database_url, connect_timeout=5) as conn:
            row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StartupError(f"cannot connect to DATABASE_URL: {first}") from exc
    if row is None:
        raise StartupError(
            "the PostgreSQL server at DATABASE_URL has no pgvector extension; install it "
            "(e.g. the postgresql-<version>-pgvector package) or unset DATABASE_URL to use the embedded server"
        )


def prepare_database(config: RuntimeConfig) -> Callable[[], None]:
    """Makes the database reachable; returns the function that undoes what this process started."""
    if config.database_url:
        require_pgvector(config.database_url)
        return lambda: None
    from brain import embedded_db

    server, started = embedded_db.ensure_running(config.data_dir)
    return (lambda: embedded_db.stop(server)) if started else (lambda: None)


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "brain.settings")
    import django

    django.setup()


def _run_manage(argv: Sequence[str]) -> int:
    from django.core.management import execute_from_command_line

    execute_from_command_line(["brain manage", *argv])
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brain", description="External Brain: memory for AI coding agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}
    for words, module_path, needs_db in COMMANDS:
        module = importlib.import_module(module_path)
        target = sub
        for word in words[:-1]:
            if word not in groups:
                group = sub.add_parser(word, help=f"{word} commands")
                groups[word] = group.add_subparsers(dest=f"{word}_command", metavar="ACTION", required=True)
            target = groups[word]
        command = target.add_parser(words[-1], help=module.HELP, description=module.HELP)
        module.configure(command)
        command.set_defaults(_module=module, _needs_db=needs_db)
    sub.add_parser("manage", help="run a Django management command (migrate, createsuperuser, shell, ...)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["manage"]:
        return _with_database(lambda: _run_manage(argv[1:]))
    args = _build_parser().parse_args(argv)
    if not getattr(args, "_module", None):
        _build_parser().print_help()
        return 2
    if args._needs_db:
        # `doctor` reports pending migrations instead of applying them.
        migrate_first = args._module.__name__ != "brain.doctor"
        return _with_database(lambda: int(args._module.run(args)), migrate_first=migrate_first)
    try:
        return int(args._module.run(args))
    except StartupError as exc:
        return _fail(str(exc))


def _apply_pending_migrations() -> None:
    """A command run on a fresh data dir (before any `brain serve`) finds its tables in place."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        print(f"brain: applying {len(pending)} pending migration(s)", file=sys.stderr)
        call_command("migrate", interactive=False, verbosity=0)


def _with_database(body: Callable[[], int], *, migrate_first: bool = False) -> int:
    try:
        cleanup = prepare_database(runtime_config())
    except StartupError as exc:
        return _fail(str(exc))
    try:
        setup_django()
        if migrate_first:
            _apply_pending_migrations()
        return body()
    except (StartupError, BrainError) as exc:
        return _fail(str(exc))
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
