"""Every tunable has one default, written beside the code that uses it; settings hold only what the
environment overrides (None: the code's default). Each case starts Django in a fresh process, so the
environment it sees is exactly the one given here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# Prints what settings hold and what the product builds from them.
_PROBE = """
import dataclasses, json
import django
django.setup()
from django.conf import settings
from knowledge.embeddings import EmbeddingSettings, settings_from_django
from knowledge.injection import DEFAULT_BUDGET
from knowledge.llm import LlmSettings, configured_model, llm_settings
from knowledge.models import DECAY_FLOOR
from knowledge.scoring import Weights
from knowledge.search import Fusion
from knowledge.selectors.search import decay_floor, fusion_from_settings, injection_budget
from sessions.services.jobs import JobSettings, job_settings

flat = {name: getattr(settings, name) for name in dir(settings) if name.startswith("BRAIN_EMBEDDINGS_")}
print(json.dumps({
    "settings": {**settings.BRAIN_RETRIEVAL, **settings.BRAIN_LLM, **settings.BRAIN_JOBS, **flat},
    "same": {
        "fusion": fusion_from_settings() == Fusion(), "weights": Weights.from_settings() == Weights(),
        "llm": llm_settings() == LlmSettings(), "jobs": job_settings() == JobSettings(),
        "embeddings": settings_from_django() == EmbeddingSettings(),
        "decay_floor": decay_floor() == DECAY_FLOOR, "budget": injection_budget() == DEFAULT_BUDGET,
    },
    "fusion": dataclasses.asdict(fusion_from_settings()), "weights": dataclasses.asdict(Weights.from_settings()),
    "defaults": {"fusion": dataclasses.asdict(Fusion()), "weights": dataclasses.asdict(Weights())},
    "decay_floor": decay_floor(), "budget": injection_budget(), "model": configured_model(),
    "quota": llm_settings().daily_quota, "custom_openai": llm_settings().openai_base_url_is_custom,
    "lease_s": job_settings().lease_s, "batch_size": settings_from_django().batch_size,
}))
"""


def _documented_variables() -> set[str]:
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))


def _probe(tmp_path: Path, **overrides: str) -> subprocess.CompletedProcess[str]:
    # No documented variable leaks in from the caller's environment; the data dir is this test's own.
    env = {k: v for k, v in os.environ.items() if k not in _documented_variables()}
    env.update(PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="brain.settings", BRAIN_DATA_DIR=str(tmp_path), **overrides)
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def _probed(tmp_path: Path, **overrides: str) -> dict[str, Any]:
    done = _probe(tmp_path, **overrides)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_without_overrides_settings_hold_no_defaults_and_the_product_runs_the_code_defaults(tmp_path: Path) -> None:
    probed = _probed(tmp_path)
    assert len(probed["settings"]) > 30
    assert {name: value for name, value in probed["settings"].items() if value is not None} == {}
    assert probed["same"] == dict.fromkeys(probed["same"], True)
    assert probed["fusion"]["max_distance"] == 0.75  # what the product has always run, now also Fusion()'s own


def test_an_environment_override_reaches_the_product(tmp_path: Path) -> None:
    probed = _probed(
        tmp_path, BRAIN_RETRIEVAL_MAX_DISTANCE="0.5", BRAIN_RETRIEVAL_WEIGHT_CONFIDENCE="0.4",
        BRAIN_RETRIEVAL_RRF_K="", BRAIN_RETRIEVAL_DECAY_FLOOR="0.2", BRAIN_RETRIEVAL_BUDGET_TOKENS="900",
        KEA_MODEL="qwen3-coder", BRAIN_LLM_DAILY_QUOTA="5", OPENAI_BASE_URL="http://127.0.0.1:11434/v1",
        BRAIN_JOBS_LEASE_S="7", BRAIN_EMBEDDINGS_BATCH_SIZE="8",
    )
    assert probed["fusion"] == {**probed["defaults"]["fusion"], "max_distance": 0.5}  # an empty RRF_K: default
    assert probed["weights"] == {**probed["defaults"]["weights"], "confidence": 0.4}
    assert (probed["decay_floor"], probed["budget"], probed["model"], probed["quota"]) == (0.2, 900, "qwen3-coder", 5)
    assert probed["custom_openai"] is True
    assert (probed["lease_s"], probed["batch_size"]) == (7, 8)


def test_a_value_that_does_not_parse_names_its_variable(tmp_path: Path) -> None:
    done = _probe(tmp_path, BRAIN_RETRIEVAL_CANDIDATES="many")
    assert done.returncode != 0
    assert "BRAIN_RETRIEVAL_CANDIDATES='many' is not a valid int" in done.stderr
