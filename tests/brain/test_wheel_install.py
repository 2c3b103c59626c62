"""The package as a user installs it: the wheel is built (pip, build isolation), installed into a fresh
virtual environment, and `brain serve` is started from an unrelated directory. Every page a first-time user
opens must render (the templates travel inside the wheel)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import pytest

from tests.support.proc import decoy_packages, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["/", "/accounts/signup/", "/accounts/login/", "/accounts/password/reset/", "/healthz",
         "/static/admin/css/base.css"]


def _fresh_env(tmp: Path) -> Path:
    leftover = not (ROOT / "build").exists()
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(ROOT)],
                       check=True, timeout=600, capture_output=True)
    finally:
        if leftover:  # setuptools' build/ copy of the packages would make mypy see every module twice
            shutil.rmtree(ROOT / "build", ignore_errors=True)
    wheel = next((tmp / "dist").glob("external_brain-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.check_output([str(venv / "bin" / "python"), "-c", probe], text=True).strip())
    # --target: this environment's editable install of the project must not count as "already installed".
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, timeout=300, capture_output=True)
    # Dependencies come from this environment's site-packages (offline), after the wheel's own files.
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def test_installed_wheel_serves_every_first_hour_page(tmp_path: Path) -> None:
    venv = _fresh_env(tmp_path)
    port, data, elsewhere = free_port(), tmp_path / "data", tmp_path / "elsewhere"
    decoy_packages(elsewhere)  # the user's own directory may hold packages named like ours: never imported
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    # -P: as the `brain` script runs, without the working directory on the module path.
    python = [str(venv / "bin" / "python"), "-P"]
    where = subprocess.check_output([*python, "-c", "import brain; print(brain.__file__)"], text=True, cwd=elsewhere,
                                    env=env)
    assert where.startswith(str(venv)), where  # the wheel's code, not this checkout's
    env.update({"BRAIN_DATA_DIR": str(data), "BRAIN_PORT": str(port)})
    log = tmp_path / "serve.log"
    argv = [*python, "-m", "brain.cli", "serve", "--no-worker"]
    server = subprocess.Popen(argv, cwd=elsewhere, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base, server, log)
        with httpx.Client(base_url=base, timeout=30) as http:
            for page in PAGES:
                assert http.get(page).status_code == 200, page
            credentials = (data / "initial-admin.txt").read_text()
            email, password = re.findall(r"^\w+: (.+)$", credentials, re.M)
            login = http.get("/accounts/login/")
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
            assert csrf, login.text[:500]
            signed_in = http.post("/accounts/login/", data={"csrfmiddlewaretoken": csrf.group(1), "username": email,
                                                            "password": password}, follow_redirects=True)
            assert signed_in.status_code == 200 and "Sign out" in signed_in.text
            for page in ["/", "/settings/tokens", "/settings/setup"]:
                answer = http.get(page, follow_redirects=True)
                assert answer.status_code == 200 and "Sign out" in answer.text, page
    finally:
        server.terminate()
        server.wait(timeout=60)


def _wait_ready(base: str, server: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()[-3000:]
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise AssertionError("brain serve did not answer /healthz in time")
