"""`brain import PATH... --email E [--project NAME] [--dry-run] [--json]`.

Files or folders; a progress bar on stderr; a summary (or with --json one JSON object: `created`, `merged`,
`skipped`, `failed` and the per-file receipts) on stdout. Exit status 1 when a file failed."""

from __future__ import annotations

import argparse
import json

HELP = "import rule files (CLAUDE.md, AGENTS.md, .cursorrules, .mdc, ...), MCP memory JSONL or a JSON export"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to import")
    parser.add_argument("--email", required=True, help="the user the rules belong to")
    parser.add_argument("--project", default=None, help="import into this project (created when missing)")
    parser.add_argument("--dry-run", action="store_true", help="report what would happen, store nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object with counts and receipts")


def _summary(report: dict) -> str:  # type: ignore[type-arg]
    lines = []
    for f in report["files"]:
        if f["error"]:
            lines.append(f"FAILED  {f['file']}: {f['error']}")
        else:
            lines.append(f"ok      {f['file']} ({f['format']}): {f['created']} created, {f['merged']} merged, "
                         f"{f['skipped']} skipped")
    verb = "would be " if report["dryRun"] else ""
    lines.append(f"{report['created']} rules {verb}created, {report['merged']} merged, {report['skipped']} skipped, "
                 f"{report['failed']} file(s) failed")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from brain.errors import NotFound
    from brain.progress import progress
    from knowledge.importing.collect import collect
    from knowledge.services.imports import ImportFile, knowledge_import
    from projects.scope import Principal
    from projects.selectors.accounts import user_by_email

    user = user_by_email(email=args.email)
    paths, missing = collect(args.paths)
    if missing:
        raise NotFound(f"no such file or folder: {', '.join(missing)}")
    files = [ImportFile(str(p), p.read_bytes()) for p in paths]
    with progress(total=len(files), desc="import", unit="file") as bar:
        report = knowledge_import(principal=Principal(user=user), files=files, project_name=args.project,
                                  dry_run=args.dry_run, progress=lambda done, total, name: bar.update(1))
    out = report.as_dict()
    print(json.dumps(out, indent=2) if args.json else _summary(out))
    return 1 if report.failed else 0
