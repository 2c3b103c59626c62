"""Path globs: fnmatch's meaning plus `**/` and "from any folder", matched without regex backtracking; a glob a
tenant teaches cannot hold a worker, and dotted folders match."""

from __future__ import annotations

import fnmatch
import random
import subprocess
import sys

import pytest

from knowledge.globs import Glob, normal_glob
from knowledge.selectors.guard import guard_check
from knowledge.services.guard import guard_rule_add
from tests.conftest import Tenant

CASES = [
    ("dist/**", "dist/app.js", True), ("dist/**", "pkg/dist/a/b.js", True), ("dist/**", "distribution/x", False),
    ("dist/", "dist/css/site.css", True), ("./dist/**", "dist/a", True), ("/dist/**", "dist/a", True),
    ("**/*.min.js", "a/b/c.min.js", True), ("**/*.min.js", "c.min.js", True), ("*.min.js", "a/b.min.js", True),
    (".github/workflows/**", ".github/workflows/ci.yml", True), (".github/workflows/**", "x/.github/workflows/a", True),
    (".github/workflows/**", "github/workflows/ci.yml", False), ("src/*.py", "src/a/b.py", True),
    ("src/[ab].py", "src/a.py", True), ("src/[!ab].py", "src/a.py", False), ("src/[!ab].py", "src/c.py", True),
    ("a?c", "abc", True), ("a?c", "ac", False), ("[", "[", True), ("a[b", "a[b", True), ("**", "anything/at/all", True),
    ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b", True), ("a/**/b", "a/xb", False), ("a**b", "a/x/b", True),
]


@pytest.mark.parametrize(("glob", "path", "expected"), CASES)
def test_the_glob_table(glob: str, path: str, expected: bool) -> None:
    assert Glob(glob).matches(path) is expected


def test_globs_without_double_stars_mean_what_fnmatch_means_from_any_folder() -> None:
    rng = random.Random(5)
    for _ in range(20_000):
        glob = "".join(rng.choice("ab*?[]!") for _ in range(rng.randint(1, 7)))
        path = "".join(rng.choice("ab/") for _ in range(rng.randint(0, 8)))
        if "**" in glob or glob.startswith("/"):
            continue
        starts = [0] + [i + 1 for i, c in enumerate(path) if c == "/"]
        expected = any(fnmatch.fnmatchcase(path[s:], normal_glob(glob)) for s in starts)
        assert Glob(glob).matches(path) is expected, (glob, path)


def test_a_glob_that_backtracks_for_hours_as_a_regex_answers(tmp_path: object) -> None:
    """`**a**a**a**b` against a long run of `a` took hours as a regex (n^4 backtracking, holding the GIL). Run in a
    child process so a regression fails here instead of hanging the suite; the limit is only a hang guard."""
    code = ("from knowledge.globs import Glob; import sys; "
            "sys.exit(0 if not Glob('**a**a**a**a**b').matches('x/' + 'a' * 20000) else 1)")
    done = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.django_db
def test_a_taught_dotted_folder_rule_blocks_its_folder_for_its_tenant_only(tenant_a: Tenant,
                                                                           tenant_b: Tenant) -> None:
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern=".github/workflows/**",
                   text="CI workflows change through review only")
    guard_rule_add(owner=tenant_a.user, project=tenant_a.project, kind="path_glob", pattern="**a**a**a**b",
                   text="a hostile glob")

    def check(tenant: Tenant, action: str) -> bool:
        return guard_check(owner_id=tenant.user.id, project_id=tenant.project.id, action=action,
                           semantic=False).allowed

    assert not check(tenant_a, "edit .github/workflows/ci.yml")
    assert not check(tenant_a, "edit ./.github/workflows/ci.yml")
    assert check(tenant_a, "edit github/workflows/ci.yml")
    assert check(tenant_a, "edit x/" + "a" * 300)  # answers, and it does not end in b
    assert check(tenant_b, "edit .github/workflows/ci.yml")
