"""`brain token create --email E [--project NAME] [--name LABEL] [--expires-days N]`.

Prints only the raw token on stdout, so `T=$(brain token create ...)` works.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

HELP = "mint an API token and print it once"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", required=True, help="the token's owner")
    parser.add_argument("--project", default=None, help="bind the token to this project of the user's orgs")
    parser.add_argument("--name", default="", help="a label shown in the token list")
    parser.add_argument("--expires-days", type=int, default=None, help="expire after N days")


def run(args: argparse.Namespace) -> int:
    from django.utils import timezone

    from brain.errors import NotFound, ValidationFailed
    from projects.selectors.accounts import project_of_user_named, user_by_email
    from projects.services.accounts import token_create

    user = user_by_email(email=args.email)
    project = None
    if args.project:
        project = project_of_user_named(user=user, name=args.project)
        if project is None:
            raise NotFound(f"{user.email} has no project named {args.project!r}")
    if args.expires_days is not None and args.expires_days < 1:
        raise ValidationFailed("--expires-days must be 1 or more")
    expires = timezone.now() + timedelta(days=args.expires_days) if args.expires_days else None
    _, raw = token_create(user=user, project=project, label=args.name, expires_at=expires)
    print(raw)
    return 0
