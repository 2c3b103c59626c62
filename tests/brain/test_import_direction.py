"""Apps import one way only: brain <- projects <- knowledge <- sessions <- {mcpgw, dashboard}.

The two interfaces on top (the MCP gateway and the dashboard) never import each other; benchmarks
(`bench/`) may import anything, and nothing imports them except the CLI's dotted-path registry.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

LAYERS = [{"brain"}, {"projects"}, {"knowledge"}, {"sessions"}, {"mcpgw", "dashboard"}]
APPS = set().union(*LAYERS) | {"bench"}
ROOT = Path(__file__).resolve().parents[2]


def _imported_apps(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & APPS


def _imports_by_file(paths: list[Path]) -> dict[str, set[str]]:
    """Parses in a fresh interpreter: CPython 3.11's ast.parse can fail spuriously ("AST constructor
    recursion depth mismatch") inside a long test process whose recursion counter another test disturbed."""
    script = (
        "import json, sys\n"
        "from tests.brain.test_import_direction import _imported_apps\n"
        "from pathlib import Path\n"
        "print(json.dumps({p: sorted(_imported_apps(Path(p))) for p in json.load(sys.stdin)}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps([str(p) for p in paths]),
                            capture_output=True, text=True, cwd=ROOT, check=True)
    return {path: set(apps) for path, apps in json.loads(result.stdout).items()}


def _allowed(app: str) -> set[str]:
    rank = next(i for i, layer in enumerate(LAYERS) if app in layer)
    return set().union(*LAYERS[:rank]) | {app}


def test_apps_only_import_apps_below_them() -> None:
    files = {path: app for app in sorted(set().union(*LAYERS)) for path in sorted((ROOT / app).rglob("*.py"))}
    imports = _imports_by_file(list(files))
    assert len(imports) == len(files) > 100
    violations = [
        f"{path.relative_to(ROOT)} imports {sorted(bad)}"
        for path, app in files.items() if (bad := imports[str(path)] - _allowed(app))
    ]
    assert violations == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("from mcpgw.views import x\nimport sessions.models\nfrom bench import y\n")
    assert _imported_apps(sample) == {"mcpgw", "sessions", "bench"}
    assert _allowed("dashboard") == {"brain", "projects", "knowledge", "sessions", "dashboard"}
