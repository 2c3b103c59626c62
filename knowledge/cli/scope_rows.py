"""`brain knowledge recount`: put each scope's kept knowledge size back to its rows now, instead of waiting for the
nightly task (after a data-only restore that ran with its triggers disabled, say)."""

from __future__ import annotations

import argparse

HELP = "recount each scope's kept knowledge size (the row count its searches weigh terms by) from its rows now"


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from knowledge.services.scope_rows import scope_rows_recount

    corrected = scope_rows_recount()
    print(f"corrected {corrected} scope(s)" if corrected else "every scope's kept size already matched its rows")
    return 0
