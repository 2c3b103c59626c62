"""The one reader of the process environment.

Settings, the `brain` command line and the embedded database runner all take their values from
`runtime_config()`, so a variable is parsed in exactly one place and documented in `.env.example`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import environ
import platformdirs

env = environ.Env()

# A `.env` file beside manage.py is read when present; real environment variables win.
_ROOT = Path(__file__).resolve().parent.parent
if (_ROOT / ".env").is_file():
    environ.Env.read_env(str(_ROOT / ".env"), overwrite=False)


@dataclass(frozen=True)
class RuntimeConfig:
    data_dir: Path
    host: str
    port: int
    database_url: str | None
    redis_url: str | None
    debug: bool

    @property
    def pg_dir(self) -> Path:
        return self.data_dir / "pg"

    @property
    def broker_dir(self) -> Path:
        return self.data_dir / "broker"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("external-brain"))


def runtime_config() -> RuntimeConfig:
    return RuntimeConfig(
        data_dir=Path(env.str("BRAIN_DATA_DIR", default=str(default_data_dir()))).expanduser().resolve(),
        host=env.str("BRAIN_HOST", default="127.0.0.1"),
        port=env.int("BRAIN_PORT", default=8000),
        database_url=env.str("DATABASE_URL", default="") or None,
        redis_url=env.str("REDIS_URL", default="") or None,
        debug=env.bool("BRAIN_DEBUG", default=False),
    )


def secret_key_for(data_dir: Path) -> str:
    """A random key kept in the data dir, so a laptop install is secure without configuration."""
    import secrets

    key_file = data_dir / "secret_key"
    if key_file.is_file():
        return key_file.read_text().strip()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        key_file.write_text(key)
        key_file.chmod(0o600)
        return key
    except OSError:
        # Unwritable data dir: startup reports it with a clear message; settings must still import.
        return secrets.token_urlsafe(50)


def email_config() -> dict[str, object]:
    """Outgoing mail: printed to the console unless BRAIN_EMAIL_URL names an SMTP server.

    BRAIN_EMAIL_URL=smtp+tls://user:password@smtp.example.com:587 (django-environ's e-mail URL form).
    """
    config: dict[str, object] = env.email_url("BRAIN_EMAIL_URL", default="consolemail://")
    config["DEFAULT_FROM_EMAIL"] = env.str("BRAIN_EMAIL_FROM", default="External Brain <brain@localhost>")
    return config
