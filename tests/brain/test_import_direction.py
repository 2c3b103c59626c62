"""Apps import one way only: brain <- projects <- knowledge <- sessions <- mcpgw <- dashboard."""

from __future__ import annotations

import ast
from pathlib import Path

ORDER = ["brain", "projects", "knowledge", "sessions", "mcpgw", "dashboard"]
ROOT = Path(__file__).resolve().parents[2]


def _imported_apps(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(ORDER)


def test_apps_only_import_apps_below_them() -> None:
    violations = []
    for rank, app in enumerate(ORDER):
        allowed = set(ORDER[: rank + 1])
        for path in sorted((ROOT / app).rglob("*.py")):
            bad = _imported_apps(path) - allowed
            if bad:
                violations.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert violations == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("from mcpgw.views import x\nimport sessions.models\n")
    assert _imported_apps(sample) == {"mcpgw", "sessions"}
