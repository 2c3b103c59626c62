"""`brain user create --email E [--password P] [--staff]`."""

from __future__ import annotations

import argparse

HELP = "create a user (with a personal org)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", required=True)
    parser.add_argument("--password", default=None, help="omit to create a user who cannot sign in yet")
    parser.add_argument("--staff", action="store_true", help="may use Django admin")


def run(args: argparse.Namespace) -> int:
    from projects.services.accounts import user_create

    user = user_create(email=args.email, password=args.password, is_staff=args.staff)
    role = "staff user" if user.is_staff else "user"
    print(f"created {role} {user.email}")
    return 0
