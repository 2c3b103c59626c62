"""`brain guard calibrate [--email E [--project NAME]] [--dry-run] [--json]`: measures the semantic guard's
threshold for the embedding model in use and stores it (knowledge/services/guard_calibrate.py)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from projects.models import Project, User

HELP = "measure and store the semantic guard's warning threshold for the embedding model in use"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", default=None,
                        help="calibrate on this user's stored forbidden actions (default: the built-in labelled set)")
    parser.add_argument("--project", default=None, help="with --email: that project's rows (default: personal rows)")
    parser.add_argument("--dry-run", action="store_true", help="print the result, store nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _text(result: dict) -> str:  # type: ignore[type-arg]
    lines = [f"embedding model: {result['embeddingModel']}  (pairs: {result['source']})"]
    for label, key in (("matches", "matches"), ("non-matches", "nonMatches")):
        s = result[key]
        lines.append(f"{label:12} n={s['n']:<4} min {s['min']:.3f}  p10 {s['p10']:.3f}  p50 {s['p50']:.3f}  "
                     f"p90 {s['p90']:.3f}  max {s['max']:.3f}")
    lines.append(f"threshold {result['threshold']:.3f}: warns on {result['truePositiveRate']:.0%} of matches, "
                 f"{result['falsePositiveRate']:.0%} of non-matches")
    lines.append("stored: the guard uses it for this model (BRAIN_GUARD_SEMANTIC_THRESHOLD still overrides it)"
                 if result["stored"] else "not stored (--dry-run)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from brain.errors import ValidationFailed
    from knowledge.embeddings import EmbeddingUnavailable
    from knowledge.services.guard_calibrate import builtin_pairs, guard_calibrate, scope_pairs
    from projects.selectors.accounts import user_by_email

    if args.project and not args.email:
        raise ValidationFailed("--project needs --email (whose project it is)")
    if args.email:
        user = user_by_email(email=args.email)
        project = _project(user, args.project) if args.project else None
        labelled, source = scope_pairs(owner=user, project=project), f"scope:{project.id if project else user.id}"
    else:
        labelled, source = builtin_pairs(), "builtin"
    try:
        result = guard_calibrate(labelled=labelled, source=source, store=not args.dry_run).as_dict()
    except EmbeddingUnavailable as exc:
        raise ValidationFailed(f"embeddings are unavailable ({exc}); the semantic guard needs them") from None
    result["stored"] = not args.dry_run
    print(json.dumps(result) if args.json else _text(result))
    return 0


def _project(user: User, name: str) -> Project:
    from brain.errors import NotFound
    from projects.scope import Principal
    from projects.selectors.accounts import projects_visible

    project = projects_visible(principal=Principal(user=user)).filter(name__iexact=name).first()
    if project is None:
        raise NotFound(f"{name!r} is not one of the user's projects")
    return project
