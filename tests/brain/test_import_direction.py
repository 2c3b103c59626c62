"""Apps import one way only: brain <- projects <- knowledge <- sessions <- {mcpgw, dashboard}.

The two interfaces on top (the MCP gateway and the dashboard) never import each other. The benchmark
harnesses (`brain/bench/`) may import anything, and nothing imports them except the CLI's table, by
dotted path. Inside an app a module's folder names its role: `selectors/` (reads) never import
`services/` (writes), and neither imports an interface (`api/`, `cli/`, `views/`, the gateway, the
dashboard).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

LAYERS = [{"brain"}, {"projects"}, {"knowledge"}, {"sessions"}, {"mcpgw", "dashboard"}]
APPS = set().union(*LAYERS)
BENCH = "brain.bench"
INTERFACES = {"api", "cli", "views"}
ROOT = Path(__file__).resolve().parents[2]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in APPS}


def _imported_apps(path: Path) -> set[str]:
    modules = _imported_modules(path)
    return {m.split(".")[0] for m in modules} | ({"bench"} if any(_is_bench(m) for m in modules) else set())


def _is_bench(module: str) -> bool:
    return module == BENCH or module.startswith(BENCH + ".")


def _imports_by_file(paths: list[Path]) -> dict[str, set[str]]:
    """Parses in a fresh interpreter: CPython 3.11's ast.parse can fail spuriously ("AST constructor
    recursion depth mismatch") inside a long test process whose recursion counter another test disturbed."""
    script = (
        "import json, sys\n"
        "from tests.brain.test_import_direction import _imported_modules\n"
        "from pathlib import Path\n"
        "print(json.dumps({p: sorted(_imported_modules(Path(p))) for p in json.load(sys.stdin)}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], input=json.dumps([str(p) for p in paths]),
                            capture_output=True, text=True, cwd=ROOT, check=True)
    return {path: set(mods) for path, mods in json.loads(result.stdout).items()}


def _allowed(app: str) -> set[str]:
    rank = next(i for i, layer in enumerate(LAYERS) if app in layer)
    return set().union(*LAYERS[:rank]) | {app}


def _role(module: str) -> str | None:
    """`services`, `selectors`, `api`, `cli` or `views` for a module inside an app's role package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] in APPS and not _is_bench(module) else None


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _role_violation(module: str, imported: str) -> bool:
    role, target = _role(module), _role(imported)
    if role == "selectors" and target == "services":
        return True
    if role in {"selectors", "services"}:
        return target in INTERFACES or imported.split(".")[0] in {"mcpgw", "dashboard"}
    return False


def _files() -> dict[Path, str]:
    return {path: app for app in sorted(APPS) for path in sorted((ROOT / app).rglob("*.py"))}


def test_apps_only_import_apps_below_them() -> None:
    files = _files()
    imports = _imports_by_file(list(files))
    assert len(imports) == len(files) > 100
    violations = []
    for path, app in files.items():
        if _is_bench(_module_of(path)):
            continue
        apps = {m.split(".")[0] for m in imports[str(path)]}
        if bad := apps - _allowed(app):
            violations.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
        if bench := sorted(m for m in imports[str(path)] if _is_bench(m)):
            violations.append(f"{path.relative_to(ROOT)} imports the benchmarks {bench}")
    assert violations == []


def test_role_packages_import_down_only() -> None:
    files = _files()
    imports = _imports_by_file(list(files))
    violations = [
        f"{path.relative_to(ROOT)} imports {imported}"
        for path in files for imported in sorted(imports[str(path)])
        if _role_violation(_module_of(path), imported)
    ]
    assert violations == []


def test_no_flat_role_modules_left() -> None:
    """A role is a folder, never a name prefix (`services_x.py`, `selectors_x.py`, `api_x.py`, `cli_x.py`)."""
    flat = [str(p.relative_to(ROOT)) for p in ROOT.glob("*/*.py")
            if p.parent.name in APPS and p.stem.split("_")[0] in {"services", "selectors", "api", "cli", "views"}
            and "_" in p.stem]
    assert flat == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("from mcpgw.views import x\nimport sessions.models\nfrom brain.bench import y\n")
    assert _imported_apps(sample) == {"mcpgw", "sessions", "brain", "bench"}
    assert _allowed("dashboard") == {"brain", "projects", "knowledge", "sessions", "dashboard"}
    assert _role_violation("knowledge.selectors.live", "knowledge.services.teach")
    assert _role_violation("sessions.services.open", "sessions.api.schemas")
    assert _role_violation("sessions.services.open", "mcpgw.protocol")
    assert not _role_violation("sessions.services.open", "knowledge.selectors.search")
    assert not _role_violation("mcpgw.tools.projects", "projects.services.accounts")
