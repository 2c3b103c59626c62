"""deploy/ read by the real tools: podman-compose resolves the compose file, kubernetes-validate checks the
manifests against the Kubernetes API schemas, and `manage.py check --deploy` is clean with production settings."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import yaml

from tests.support.proc import run_brain

ROOT = Path(__file__).resolve().parents[2]
PODMAN_COMPOSE = shutil.which("podman-compose", path=str(Path(sys.executable).parent)) or "podman-compose"


def test_podman_compose_resolves_the_compose_file() -> None:
    env = {**os.environ, "BRAIN_SECRET_KEY": "s" * 50, "BRAIN_DOMAIN": "brain.example.com"}
    done = subprocess.run([PODMAN_COMPOSE, "-f", str(ROOT / "deploy/docker-compose.yml"), "config"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    web = resolved["services"]["web"]
    assert web["environment"]["DATABASE_URL"].startswith("postgres://") and web["deploy"]["replicas"] == 2
    assert "beat" in resolved["services"] and "replicas" not in resolved["services"]["beat"].get("deploy", {})


def test_compose_refuses_to_resolve_without_a_secret_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "BRAIN_SECRET_KEY"}
    done = subprocess.run([PODMAN_COMPOSE, "-f", str(ROOT / "deploy/docker-compose.yml"), "config"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "BRAIN_SECRET_KEY" in done.stdout + done.stderr


def test_kubernetes_manifests_match_the_api_schemas_strictly() -> None:
    documents = list(yaml.safe_load_all((ROOT / "deploy/k8s/brain.yaml").read_text()))
    for document in documents:
        kubernetes_validate.validate(document, "1.37.0", strict=True)
    web = next(d for d in documents if d["metadata"]["name"] == "brain-web" and d["kind"] == "Deployment")
    container = web["spec"]["template"]["spec"]["containers"][0]
    # Redis or PostgreSQL down must not take every replica out of the Service: readiness is the process's own.
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"


def test_kubernetes_validate_rejects_a_broken_manifest() -> None:
    broken = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
              "spec": {"replicas": "two", "selector": {}, "template": {}}}
    try:
        kubernetes_validate.validate(broken, "1.37.0", strict=True)
    except kubernetes_validate.ValidationError:
        return
    raise AssertionError("a Deployment with replicas='two' passed validation")


def test_check_deploy_is_clean_with_production_settings(tmp_path: Path) -> None:
    env = {"BRAIN_SECRET_KEY": secrets.token_urlsafe(50), "BRAIN_ALLOWED_HOSTS": "brain.example.com",
           "BRAIN_PUBLIC_URL": "https://brain.example.com", "BRAIN_CSRF_TRUSTED_ORIGINS": "https://brain.example.com",
           "BRAIN_BEHIND_TLS_PROXY": "true", "BRAIN_DEBUG": "false", "BRAIN_DATA_DIR": str(tmp_path),
           "BRAIN_EMAIL_URL": "smtp+tls://brain:secret@smtp.example.com:587", "REDIS_URL": "redis://127.0.0.1:6379/0"}
    done = run_brain("manage", "check", "--deploy", "--fail-level", "WARNING", env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # The same settings with mail left on the console are not clean: the operator is told (brain.W001).
    env.pop("BRAIN_EMAIL_URL")
    done = run_brain("manage", "check", "--deploy", "--fail-level", "WARNING", env=env, timeout=120)
    assert done.returncode != 0 and "brain.W001" in done.stdout + done.stderr
