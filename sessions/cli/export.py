"""`brain export --email E [--project NAME] [--format json|agents-md|claude-md|cursor-rules] [--out PATH]
[--no-sessions]`.

JSON and Markdown go to --out (a file) or stdout, streamed. Cursor rules are several `.mdc` files: --out names
a folder (created; e.g. `.cursor/rules`) or, ending in `.zip`, a zip; without --out the zip goes to stdout."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

HELP = "export knowledge as lossless JSON, AGENTS.md, CLAUDE.md or Cursor .mdc rules"
FORMATS = ("json", "agents-md", "claude-md", "cursor-rules")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", required=True, help="whose knowledge to export")
    parser.add_argument("--project", default=None, help="only this project (default: everything visible)")
    parser.add_argument("--format", choices=FORMATS, default="json", help="default: json")
    parser.add_argument("--out", default=None, help="file (or folder for cursor-rules); default: stdout")
    parser.add_argument("--no-sessions", action="store_true", help="JSON: leave sessions and events out")


def _write(chunks: Iterable[str], out: str | None) -> None:
    if out is None:
        for chunk in chunks:
            sys.stdout.write(chunk)
        sys.stdout.flush()
        return
    with Path(out).open("w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(chunk)


def _cursor_rules(files: Iterable[tuple[str, str]], out: str | None) -> int:
    from knowledge.exporting import cursor_rules_zip

    if out is not None and not out.endswith(".zip"):
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        count = 0
        for name, text in files:
            (folder / name).write_text(text, encoding="utf-8")
            count += 1
        print(f"{count} .mdc file(s) written to {folder}", file=sys.stderr)
        return 0
    spool = cursor_rules_zip(files)
    target = Path(out).open("wb") if out else sys.stdout.buffer  # noqa: SIM115 - closed below when ours
    shutil.copyfileobj(spool, target)
    if out:
        target.close()
    return 0


def run(args: argparse.Namespace) -> int:
    from knowledge.exporting import MARKDOWN_FILES
    from knowledge.selectors.export import cursor_rules_export, export_project, markdown_export
    from projects.scope import Principal
    from projects.selectors.accounts import user_by_email
    from sessions.api.export import export_document

    user = user_by_email(email=args.email)
    principal = Principal(user=user)
    project = export_project(user=user, name=args.project) if args.project else None
    if args.format == "cursor-rules":
        return _cursor_rules(cursor_rules_export(principal=principal, project=project), args.out)
    if args.format in MARKDOWN_FILES:
        _write(markdown_export(principal=principal, project=project, file_name=MARKDOWN_FILES[args.format]), args.out)
    else:
        _write(export_document(principal, project=project, sessions=not args.no_sessions), args.out)
    return 0
