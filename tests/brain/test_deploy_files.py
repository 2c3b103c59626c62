"""The deploy files stay consistent with the code: every variable they set is one the app reads."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _documented_variables() -> set[str]:
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))


def test_compose_parses_and_sets_only_documented_variables() -> None:
    compose = yaml.safe_load((ROOT / "deploy/docker-compose.yml").read_text())
    assert {"db", "redis", "migrate", "web", "worker", "beat", "caddy"} <= set(compose["services"])
    brain_env = compose["x-brain"]["environment"]
    assert set(brain_env) - _documented_variables() == set()


def test_k8s_config_uses_documented_variables_and_one_beat() -> None:
    documents = list(yaml.safe_load_all((ROOT / "deploy/k8s/brain.yaml").read_text()))
    config = next(d for d in documents if d["kind"] == "ConfigMap")
    assert set(config["data"]) - _documented_variables() == set()
    beat = next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "brain-beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"]["type"] == "Recreate"


def test_every_brain_setting_read_from_the_environment_is_documented() -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "brain").glob("*.py"))
    read = set(re.findall(r'env(?:\.\w+|_override)\("([A-Z][A-Z0-9_]+)"', sources))
    assert {"BRAIN_SECRET_KEY", "BRAIN_RETRIEVAL_MAX_DISTANCE", "KEA_MODEL"} <= read  # both ways of reading are seen
    assert read - _documented_variables() == set()


def test_the_image_entrypoints_exist() -> None:
    from brain.wsgi import application

    assert callable(application)
    dockerfile = (ROOT / "deploy/Dockerfile").read_text()
    for app in ("brain", "projects", "knowledge", "sessions", "mcpgw", "dashboard"):
        assert f"COPY {app} ./{app}" in dockerfile
    # Every directory the image copies exists (a COPY of a missing one fails the build).
    for source in re.findall(r"^COPY (\S+) \./", dockerfile, re.M):
        assert (ROOT / source).exists(), source
