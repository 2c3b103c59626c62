"""gunicorn settings shared by every web replica (`brain bench cluster`, the Dockerfile, compose, Kubernetes).

Use with `gunicorn brain.wsgi:application -c python:brain.gunicorn_conf`; command-line flags override these.
"""

import os

from brain.gunicorn_log import heartbeat_dir

worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = 8
# On SIGTERM a replica stops accepting, finishes the requests in flight for up to this long, then exits:
# keep it below the orchestrator's kill delay (Kubernetes terminationGracePeriodSeconds 30, compose stop 10 s
# raised to 30 s in deploy/docker-compose.yml).
graceful_timeout = 25
timeout = 60
# Longer than the balancer's idle timeout would be wasted; shorter and clients race closed connections.
keepalive = 5
accesslog = "-"
# MCP calls answered 2xx are logged once, structured, by the gateway (brain/gunicorn_log.py).
logger_class = "brain.gunicorn_log.AccessLogger"
worker_tmp_dir = heartbeat_dir()
# A web request never holds the database longer than this (migrations, benches and jobs are not web requests).
os.environ.setdefault("BRAIN_DB_STATEMENT_TIMEOUT_MS", "30000")
# A request that arrives while PostgreSQL restarts waits this long for it instead of failing at once
# (brain/pg_backend/base.py); a restart or failover takes a few seconds.
os.environ.setdefault("BRAIN_DB_CONNECT_WAIT_S", "10")
