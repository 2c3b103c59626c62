"""The `brain` command line.

Commands that need the database start the embedded PostgreSQL first when DATABASE_URL is unset (and
stop it again if they started it). Commands of other apps are listed here by dotted path and imported
only when run, so this module depends on no app.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from brain.config import RuntimeConfig, runtime_config
from brain.errors import BrainError, StartupError

Handler = Callable[[argparse.Namespace], int]
# How long a command waits at its end for the work its writes queued in this process (`_finish_background_work`).
QUEUES_DRAIN_S = 30.0



@dataclass(frozen=True)
class Command:
    """One `brain` command: its words, the module with `HELP`, `configure(parser)` and `run(args)`, and
    what it needs first: the database running, and pending migrations applied (`doctor` reports them)."""

    words: tuple[str, ...]
    module: str
    needs_db: bool = True
    migrate_first: bool = True


COMMANDS: list[Command] = [
    Command(("serve",), "brain.serve", needs_db=False),
    Command(("doctor",), "brain.doctor", migrate_first=False),
    Command(("user", "create"), "projects.cli.user_create"),
    Command(("token", "create"), "projects.cli.token_create"),
    Command(("token", "revoke"), "projects.cli.token_revoke"),
    Command(("token", "list"), "projects.cli.token_list"),
    Command(("jobs", "run"), "sessions.cli.jobs"),
    Command(("embeddings", "backfill"), "sessions.cli.embeddings"),
    Command(("embeddings", "prepare"), "knowledge.cli.embeddings_prepare", needs_db=False),
    Command(("import",), "knowledge.cli.imports"),
    Command(("export",), "sessions.cli.export"),
    Command(("guard", "calibrate"), "knowledge.cli.guard_calibrate"),
    Command(("knowledge", "recount"), "knowledge.cli.scope_rows"),
    Command(("mcp", "stdio"), "mcpgw.stdio", needs_db=False),
    Command(("bench", "jobs"), "brain.bench.jobs"),
    Command(("bench", "tools"), "brain.bench.tools"),
    Command(("bench", "loop"), "brain.bench.loop"),
    Command(("bench", "retrieval"), "brain.bench.retrieval"),
    Command(("bench", "retrieval-scale"), "brain.bench.scale"),
    Command(("bench", "dashboard"), "brain.bench.dashboard"),
    Command(("bench", "cognibrain"), "brain.bench.cognibrain"),
    Command(("bench", "mcp"), "brain.bench.mcp_load", needs_db=False),
    Command(("bench", "cluster"), "brain.bench.cluster", needs_db=False),
    Command(("bench", "fuzz"), "brain.bench.fuzz", needs_db=False),
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
    for spec in COMMANDS:
        module = importlib.import_module(spec.module)
        target = sub
        for word in spec.words[:-1]:
            if word not in groups:
                group = sub.add_parser(word, help=f"{word} commands")
                groups[word] = group.add_subparsers(dest=f"{word}_command", metavar="ACTION", required=True)
            target = groups[word]
        command = target.add_parser(spec.words[-1], help=module.HELP, description=module.HELP)
        module.configure(command)
        command.set_defaults(_module=module, _spec=spec)
    sub.add_parser("manage", help="run a Django management command (migrate, createsuperuser, shell, ...)")
    return parser


def _exit_on_sigterm() -> None:
    """SIGTERM ends a command the way Ctrl-C does, through its `finally` blocks, so what it started stops with it
    (the embedded database, a bench's servers and rows). Python's default would end the process on the spot and
    leave them running. `brain serve` installs handlers of its own."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _exit_on_sigterm()
    if argv[:1] == ["manage"]:
        return _with_database(lambda: _run_manage(argv[1:]))
    args = _build_parser().parse_args(argv)
    if not getattr(args, "_module", None):
        _build_parser().print_help()
        return 2
    spec: Command = args._spec
    if spec.needs_db:
        return _with_database(lambda: int(args._module.run(args)), migrate_first=spec.migrate_first)
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
        _finish_background_work()
        cleanup()


def _finish_background_work() -> None:
    """What the command's writes handed to this process's queues (vectors to store, broker messages) is done before
    the database the command started stops: stopped first, the queues' threads failed on a closed server and left
    their rows to the next backfill. After QUEUES_DRAIN_S the rest is left to it all the same."""
    from brain.process_queue import flush_all

    if not flush_all(QUEUES_DRAIN_S):
        print(f"brain: background work still queued after {QUEUES_DRAIN_S:.0f} s; rows without vectors are left to "
              "the backfill (`brain embeddings backfill`, or the next `brain serve`)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
