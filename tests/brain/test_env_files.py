"""The `.env` file in the data dir is read, so an installed wheel (which has no checkout to hold one) can be
configured by a file; the real environment wins over it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

READ = "from brain.config import runtime_config as r; c = r(); print(c.host, c.port, c.data_dir)"


def _runtime(cwd: Path, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    out = subprocess.check_output([sys.executable, "-c", READ], cwd=cwd, env={**clean, **env}, text=True)
    return out.split()


def test_the_data_dirs_env_file_configures_a_brain_started_anywhere(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / ".env").write_text("BRAIN_PORT=8123\nBRAIN_HOST=0.0.0.0\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _runtime(elsewhere, BRAIN_DATA_DIR=str(data)) == ["0.0.0.0", "8123", str(data.resolve())]
    # a variable of the real environment wins over the file
    assert _runtime(elsewhere, BRAIN_DATA_DIR=str(data), BRAIN_PORT="9001")[1] == "9001"
    # no file: the defaults
    assert _runtime(elsewhere, BRAIN_DATA_DIR=str(elsewhere))[:2] == ["127.0.0.1", "8000"]
