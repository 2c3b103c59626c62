"""`brain token list --email E`: every token of the user, newest first, as the revoke command takes them."""

from __future__ import annotations

import argparse
from datetime import datetime

HELP = "list a user's tokens (prefix, name, project, created, last used, revoked)"
COLUMNS = ("prefix", "name", "project", "created", "last used", "revoked")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", required=True, help="the tokens' owner")


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment else "-"


def run(args: argparse.Namespace) -> int:
    from projects.selectors.accounts import tokens_of, user_by_email

    user = user_by_email(email=args.email)
    rows = [COLUMNS] + [
        (t.prefix, t.label or "-", t.project.name if t.project else "(all projects)", _when(t.created_at),
         _when(t.last_used_at), _when(t.revoked_at))
        for t in tokens_of(user=user)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    if len(rows) == 1:
        print(f"{user.email} has no tokens: `brain token create --email {user.email}` mints one")
    return 0
