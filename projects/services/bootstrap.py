"""First-run account for `brain serve`, so a fresh install can be signed into without a step."""

from __future__ import annotations

import secrets
from pathlib import Path

from projects.models import User
from projects.services.accounts import user_create

FIRST_ADMIN_EMAIL = "admin@localhost"


def ensure_first_admin(data_dir: Path) -> str:
    """Creates a staff user with a random password when there is no user; returns how to sign in."""
    credentials = data_dir / "initial-admin.txt"
    if User.objects.exists():
        if credentials.is_file():
            return f"sign in with the credentials in {credentials}"
        return "sign in with your account (create one: brain user create --email E --password P --staff)"
    password = secrets.token_urlsafe(12)
    user_create(email=FIRST_ADMIN_EMAIL, password=password, is_staff=True)
    credentials.write_text(f"email: {FIRST_ADMIN_EMAIL}\npassword: {password}\n")
    credentials.chmod(0o600)
    return f"sign in as {FIRST_ADMIN_EMAIL} with password {password} (also saved in {credentials})"
