"""`brain embeddings backfill`: give every knowledge item and session event a vector of the current model."""

from __future__ import annotations

import argparse
import sys

HELP = "fill missing or stale embeddings of knowledge items and session events (resumable, idempotent)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=int, default=64, help="rows embedded and committed together")


def targets() -> list[object]:
    from knowledge.services.knowledge_vectors import KNOWLEDGE
    from sessions.services.event_vectors import EVENTS

    return [KNOWLEDGE, EVENTS]  # the targets the batchers and the beat tasks fill, the same texts


def run(args: argparse.Namespace) -> int:
    from brain.progress import progress
    from knowledge.embeddings import EmbeddingUnavailable, current_model_name
    from knowledge.services.backfill import Target, embeddings_backfill, stale

    model_name = current_model_name()
    if model_name is None:
        print("brain: no working embedder (check BRAIN_EMBEDDINGS_PROVIDER and `brain doctor`)", file=sys.stderr)
        return 1
    for target in targets():
        assert isinstance(target, Target)
        todo = stale(target, model_name).count()
        with progress(total=todo, desc=target.label, unit="row") as bar:
            try:
                done = embeddings_backfill(target=target, model_name=model_name, batch_size=args.batch_size,
                                           on_batch=bar.update)
            except EmbeddingUnavailable as exc:
                print(f"brain: embedding stopped: {exc}; run the backfill again to continue", file=sys.stderr)
                return 1
        print(f"{target.label}: {done} embedded with {model_name}")
    return 0
