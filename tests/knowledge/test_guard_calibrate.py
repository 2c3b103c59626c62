"""`brain guard calibrate`: runs on a scope's stored forbidden actions (never another tenant's) or the built-in
set, stores the threshold per embedding model, and the semantic guard uses it unless the setting overrides it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from brain.cli import _build_parser
from brain.errors import ValidationFailed
from knowledge.embeddings import current_model_name
from knowledge.guard_models import GuardCalibration
from knowledge.models import KnowledgeType
from knowledge.selectors.guard import SEMANTIC_THRESHOLD, calibration_cache_clear, guard_check, semantic_threshold
from knowledge.services.create import KnowledgeDraft, knowledge_create_many
from knowledge.services.guard_calibrate import choose_threshold
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
ACTION = "npm install moment"


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    calibration_cache_clear()


def _forbid(tenant: Tenant, *pairs: tuple[str, str]) -> None:
    knowledge_create_many(owner=tenant.user, project=tenant.project, drafts=[
        KnowledgeDraft(content=text, type=KnowledgeType.ANTI_PRINCIPLE, trigger=trigger, confidence=1.0)
        for trigger, text in pairs])


def _calibrate(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    args = _build_parser().parse_args(["guard", "calibrate", "--json", *argv])
    assert args._module.run(args) == 0
    return dict(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))


def test_calibrates_on_the_scope_rows_only_and_the_guard_uses_it(tenant_a: Tenant, tenant_b: Tenant,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _forbid(tenant_a, ("moment.js", "Do not use moment.js; use dayjs instead."),
            ("git push --force", "Never run git push --force on main; use --force-with-lease."),
            ("dist/", "Never edit files under dist/ by hand: they are build output."))
    _forbid(tenant_b, ("yarn", "Do not use yarn; use npm."), ("rm -rf", "Never rm -rf the repository root."))
    out = _calibrate(capsys, "--email", tenant_a.user.email, "--project", tenant_a.project.name)
    assert (out["matches"]["n"], out["nonMatches"]["n"]) == (3, 6)  # tenant_b's two rows are not among them
    assert out["source"] == f"scope:{tenant_a.project.id}" and out["stored"] is True
    model = current_model_name()
    assert model and GuardCalibration.objects.get().threshold == out["threshold"] == semantic_threshold(model)
    verdict = guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action=ACTION)
    similarity = float(verdict.warnings[0].rsplit("similarity ", 1)[1].rstrip(")")) if verdict.warnings else 0.0
    assert (similarity >= out["threshold"]) == bool(verdict.warnings)
    # The newest calibration decides; the setting still overrides it.
    GuardCalibration.objects.create(embedding_model=model, threshold=0.99, source="test", matches=1,
                                    non_matches=1, true_positive_rate=1, false_positive_rate=0)
    calibration_cache_clear()
    assert not guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action=ACTION).warnings
    with override_settings(BRAIN_GUARD_SEMANTIC_THRESHOLD=0.05):
        assert guard_check(owner_id=tenant_a.user.id, project_id=tenant_a.project.id, action=ACTION).warnings
        theirs = guard_check(owner_id=tenant_b.user.id, project_id=tenant_b.project.id, action=ACTION)
        assert all("moment" not in w for w in theirs.warnings)  # tenant_a's rule never warns tenant_b


def test_builtin_set_dry_run_stores_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    out = _calibrate(capsys, "--dry-run")
    assert out["source"] == "builtin" and out["stored"] is False
    assert out["matches"]["n"] > 10 and out["nonMatches"]["n"] > 100
    assert out["falsePositiveRate"] <= 0.01 and out["truePositiveRate"] > 0.5
    assert not GuardCalibration.objects.exists()
    assert semantic_threshold(current_model_name()) == SEMANTIC_THRESHOLD  # nothing stored: the code default


def test_a_scope_too_small_to_calibrate_is_refused(tenant_a: Tenant, capsys: pytest.CaptureFixture[str]) -> None:
    _forbid(tenant_a, ("moment.js", "Do not use moment.js; use dayjs instead."))
    with pytest.raises(ValidationFailed, match="at least 2 stored forbidden actions"):
        _calibrate(capsys, "--email", tenant_a.user.email, "--project", tenant_a.project.name)
    assert not GuardCalibration.objects.exists()


def test_threshold_choice() -> None:
    # 0.7 catches both matches and no non-match: halfway down to 0.5, the highest non-match
    assert choose_threshold([0.7, 0.9], [0.1, 0.5]) == pytest.approx(0.6)
    # no cut keeps non-matches quiet except above them all: just over the highest non-match
    assert 0.8 < choose_threshold([0.3, 0.4], [0.2, 0.8]) < 0.81
