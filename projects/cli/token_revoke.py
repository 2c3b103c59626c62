"""`brain token revoke --email E --prefix PREFIX`."""

from __future__ import annotations

import argparse

HELP = "revoke a token by its prefix (as `brain token list` shows it)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--email", required=True)
    parser.add_argument("--prefix", required=True,
                        help="as `brain token list` or the tokens page shows it, with or without ebt_, 8+ characters")


def run(args: argparse.Namespace) -> int:
    from brain.errors import NotFound
    from projects.selectors.accounts import token_of_user_by_prefix, user_by_email
    from projects.services.accounts import token_revoke

    user = user_by_email(email=args.email)
    token = token_of_user_by_prefix(user=user, prefix=args.prefix)
    if token is None:
        raise NotFound(f"{user.email} has no token with prefix {args.prefix!r}")
    token_revoke(user=user, token_id=token.pk)
    print(f"revoked {token.prefix}")
    return 0
