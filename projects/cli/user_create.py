"""`brain user create --email E [--password P] [--staff]`: without --password, a generated one is printed once."""

from __future__ import annotations

import argparse

HELP = "create a user (with a personal org)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", required=True)
    parser.add_argument("--password", default=None,
                        help="checked like the sign-up page; omit it to get a generated one, printed once")
    parser.add_argument("--staff", action="store_true", help="may use Django admin")


def run(args: argparse.Namespace) -> int:
    import secrets

    from projects.services.accounts import user_create

    # A user without a password could never sign in; a generated one is shown once and never stored in clear.
    password = args.password if args.password is not None else secrets.token_urlsafe(18)
    user = user_create(email=args.email, password=password, is_staff=args.staff)
    role = "staff user" if user.is_staff else "user"
    print(f"created {role} {user.email}")
    if args.password is None:
        print(f"password (shown only now; change it after signing in): {password}")
    return 0
