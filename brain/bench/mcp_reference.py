"""The yardstick of `brain bench mcp --reference`: the official MCP Python SDK's `MCPServer` serving one trivial
tool under uvicorn, with JSON responses and sessions, as a baseline for what an MCP call costs at the least.

It runs from its own virtual environment (cached under the data dir, built once with pip from PyPI at the
versions pinned in constraints.txt), so the SDK version it measures is not the product's business.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from brain.bench.mcp_load import stop_process
from brain.config import runtime_config

# Same tool name as ours, so the very same client loop drives both servers.
SERVER_PY = textwrap.dedent('''
    import sys

    import uvicorn
    from mcp.server import MCPServer

    server = MCPServer("reference")


    @server.tool(name="brain_list_projects")
    def list_projects() -> dict:
        """One trivial tool: a fixed, small answer."""
        return {"projects": [{"id": "p1", "name": "Reference"}], "truncated": False}


    app = server.streamable_http_app(json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
''')
PACKAGES = ("mcp", "uvicorn")
CONSTRAINTS = Path(__file__).resolve().parents[2] / "constraints.txt"


def pinned(name: str) -> str:
    """`name==version` from constraints.txt when the source tree carries it, else the version installed beside
    this brain (an installed wheel has no constraints.txt: the SDK it measures against is the one it runs on,
    and the cached environment is rebuilt when that version changes)."""
    if CONSTRAINTS.is_file():
        match = re.search(rf"^{re.escape(name)}==(\S+)$", CONSTRAINTS.read_text(), re.MULTILINE)
        if match:
            return f"{name}=={match.group(1)}"
    try:
        return f"{name}=={importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return name


def reference_python(cache: Path | None = None) -> Path:
    """The interpreter of the reference environment, built on first use (needs PyPI once)."""
    requirements = [pinned(name) for name in PACKAGES]
    tag = re.sub(r"[^A-Za-z0-9.]+", "-", "-".join(requirements))
    root = (cache or runtime_config().data_dir / "bench") / f"mcp-reference-{tag}"
    python = root / "bin" / "python"
    if (root / ".ready").is_file():
        return python
    print(f"brain bench mcp: installing the reference server ({' '.join(requirements)}) into {root} ...",
          file=sys.stderr, flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"brain bench mcp: installing the reference server failed: {done.stderr.strip()[-400:]}")
    (root / ".ready").write_text(" ".join(requirements) + "\n")
    return python


def _wait_listening(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the reference server exited with code {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer (GET /mcp is 4xx) means it is listening
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the reference server did not start within 60 s")


@contextmanager
def reference_server(port: int, python: Path | None = None) -> Iterator[str]:
    """The /mcp URL of a running reference server; stopped on exit."""
    interpreter = python or reference_python()
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "DJANGO_SETTINGS_MODULE"}}
    proc = subprocess.Popen([str(interpreter), "-c", SERVER_PY, str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _wait_listening(url, proc)
        yield url
    finally:
        stop_process(proc, 20)
