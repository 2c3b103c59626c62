"""`brain doctor`: one line per dependency, non-zero exit when any is wrong."""

from __future__ import annotations

import argparse

HELP = "check database, pgvector, broker, embedder, vectors, migrations, indexes, guard rules and scope sizes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--restore-indexes", action="store_true",
                        help="first build every declared index the database lacks, holds invalid or holds with "
                             "other options than declared")


def _check_named(setting: str, unset: str) -> tuple[bool, str]:
    """The check a setting names by its import path (the apps above `brain` provide them), or `unset`."""
    from django.conf import settings

    path = getattr(settings, setting, None)
    if not path:
        return True, unset
    from django.utils.module_loading import import_string

    return import_string(path)()  # type: ignore[no-any-return]


def run(args: argparse.Namespace) -> int:
    from brain.db_indexes import check_indexes
    from brain.health import check_broker, check_database, check_migrations, check_pgvector

    if args.restore_indexes:
        _restore_indexes()
    checks = [
        ("database", check_database()),
        ("pgvector", check_pgvector()),
        ("broker", check_broker()),
        ("embedder", _check_named("BRAIN_EMBEDDER_CHECK", "not configured yet (full-text search only)")),
        ("vectors", _check_named("BRAIN_VECTORS_CHECK", "not configured")),
        ("migrations", check_migrations()),
        ("indexes", check_indexes()),
        ("guard", _check_named("BRAIN_GUARD_CHECK", "not configured")),
        ("scopes", _check_named("BRAIN_SCOPE_ROWS_CHECK", "not configured")),
    ]
    for name, (ok, detail) in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {name:<11} {detail}")
    return 0 if all(ok for _, (ok, _) in checks) else 1


def _restore_indexes() -> None:
    from brain.db_indexes import indexes_restore
    from brain.health import pending_migrations

    if pending_migrations():
        print("brain doctor: migrations are pending; `brain manage migrate` builds their indexes first")
        return
    built = indexes_restore(lambda line: print(line, flush=True))
    print(f"built {built} index(es)" if built else "no index was missing or built otherwise")
