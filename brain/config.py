"""The one reader of the process environment.

Settings, the `brain` command line and the embedded database runner all take their values from
`runtime_config()`, so a variable is parsed in exactly one place and documented in `.env.example`.

Tunables (retrieval weights, LLM and job timings, embedding options) have their defaults once, beside the
code that uses them, as dataclass defaults. Settings hold only what the environment overrides
(`env_override`, None when the variable is unset), and the code merges the two with `overridden`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import environ
import platformdirs
from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

env = environ.Env()
T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")

_ROOT = Path(__file__).resolve().parent.parent


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("external-brain"))


def _read_env_files() -> None:
    """Reads `.env` files when present: a checkout's beside manage.py, then the data dir's (where an installed
    wheel has nothing beside its code). A variable keeps the first value found: the real environment's, then the
    checkout's file, then the data dir's."""
    if (_ROOT / "manage.py").is_file() and (_ROOT / ".env").is_file():
        environ.Env.read_env(str(_ROOT / ".env"), overwrite=False)
    data_dir = Path(env.str("BRAIN_DATA_DIR", default=str(default_data_dir()))).expanduser()
    if (data_dir / ".env").is_file():
        environ.Env.read_env(str(data_dir / ".env"), overwrite=False)


_read_env_files()


@dataclass(frozen=True)
class RuntimeConfig:
    data_dir: Path
    host: str
    port: int
    database_url: str | None
    redis_url: str | None
    debug: bool
    db_shared_buffers_mb: str = ""  # the embedded server's cache, as set (parsed by brain.embedded_db)

    @property
    def pg_dir(self) -> Path:
        return self.data_dir / "pg"

    @property
    def broker_dir(self) -> Path:
        return self.data_dir / "broker"


def runtime_config() -> RuntimeConfig:
    return RuntimeConfig(
        data_dir=Path(env.str("BRAIN_DATA_DIR", default=str(default_data_dir()))).expanduser().resolve(),
        host=env.str("BRAIN_HOST", default="127.0.0.1"),
        port=env.int("BRAIN_PORT", default=8000),
        database_url=env.str("DATABASE_URL", default="") or None,
        redis_url=env.str("REDIS_URL", default="") or None,
        debug=env.bool("BRAIN_DEBUG", default=False),
        db_shared_buffers_mb=env.str("BRAIN_DB_SHARED_BUFFERS_MB", default="").strip(),
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


def env_override(variable: str, cast: Callable[[str], T]) -> T | None:
    """The variable parsed by `cast` (int, float, str), or None when it is unset or empty: the default
    beside the code applies. A value that does not parse stops startup with the variable's name."""
    raw = env.str(variable, default="").strip()
    if not raw:
        return None
    try:
        return cast(raw)
    except ValueError:
        kind = getattr(cast, "__name__", "value")
        raise ImproperlyConfigured(f"{variable}={raw!r} is not a valid {kind}") from None


def overridden(defaults: D, overrides: Mapping[str, Any], *, renamed: Mapping[str, str] | None = None) -> D:
    """`defaults` (a dataclass of code defaults) with every override that is set; None keeps the default.

    `renamed` maps an override's key to the field it sets; keys that name no field belong to another
    consumer of the same settings dict and are left alone."""
    names = {f.name for f in dataclasses.fields(defaults)}
    changes = {}
    for key, value in overrides.items():
        name = (renamed or {}).get(key, key)
        if value is not None and name in names:
            changes[name] = value
    return dataclasses.replace(defaults, **changes)
