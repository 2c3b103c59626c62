"""`brain embeddings prepare`: build the local model's int8 file now (an image build, a read-only deploy) instead of
in the first process that needs it; prints the file's path. No database needed."""

from __future__ import annotations

import argparse
import sys

HELP = "build the local embedding model's int8 file now and print its path (no database needed)"


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from brain.cli import setup_django

    setup_django()
    from knowledge.embeddings import local_model_prepare

    path = local_model_prepare()
    if path is None:
        print("brain: the embedding provider is not `local`; nothing to prepare", file=sys.stderr)
        return 0
    print(path)
    return 0
