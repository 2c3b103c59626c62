"""Every shell command in README.md and docs/*.md does what the docs say it does, as far as it can be checked
offline: each `brain …` line parses with the real command-line parser, each `make` target exists, each
referenced repository path exists, and the known first-hour traps stay fixed."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from brain.cli import _build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
# `brain …` as a command: at the start of a line (after VAR=value assignments) or inside $( … )
BRAIN = re.compile(r"(?:^(?:\w+=\S*\s+)*|\$\()(?:\S*/)?brain (?P<args>[^)\n|;&]*)")


def _blocks() -> list[tuple[str, str]]:
    return [(doc.name, m.group(1)) for doc in DOCS for m in FENCE.finditer(doc.read_text())]


def _lines(block: str) -> list[str]:
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()
            and not line.strip().startswith("#")]


def _brain_commands() -> list[tuple[str, str]]:
    found = []
    for name, block in _blocks():
        for line in _lines(block):
            for m in BRAIN.finditer(line):
                if not line.startswith(("{", '"', "|")):
                    found.append((name, m.group("args").strip()))
    return found


def test_the_docs_have_commands_to_check() -> None:
    assert len(_blocks()) >= 10 and len(_brain_commands()) >= 5


@pytest.mark.parametrize(("doc", "args"), _brain_commands())
def test_each_brain_command_parses(doc: str, args: str) -> None:
    # Usage notation: [optional parts] dropped, <placeholders> and … filled in, trailing # comments ignored
    usage = re.sub(r"\[[^\]]*(\]|$)", "", args).replace("…", "x")
    argv = shlex.split(re.sub(r"<[^>]+>", "x", usage), comments=True)
    if argv[:1] == ["manage"]:
        return  # passed through to Django's own parser
    try:
        _build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code != 0:  # --help exits 0
            raise AssertionError(f"{doc}: `brain {args}` is not a valid command") from None
    except argparse.ArgumentError as exc:
        raise AssertionError(f"{doc}: `brain {args}`: {exc}") from None


def test_each_make_target_exists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w.-]*):", makefile, re.M))
    for name, block in _blocks():
        for line in _lines(block):
            for target in re.findall(r"(?:^|\s)make ([a-z][\w-]*)", line):
                assert target in targets, f"{name}: `make {target}` has no target in the Makefile"


def test_each_repository_path_exists() -> None:
    for name, block in _blocks():
        for path in re.findall(r"(?<![\w/.~$-])((?:deploy|docs|brain|tests|projects|\.ci)/[\w./-]+\w)", block):
            assert (ROOT / path).exists(), f"{name}: {path} does not exist"


def test_first_hour_traps_stay_fixed() -> None:
    text = "\n".join(doc.read_text() for doc in DOCS)
    for line in text.splitlines():
        if "claude mcp add --transport" in line:
            assert "--scope user" in line, f"claude mcp add without --scope user: {line}"
        if "@modelcontextprotocol/inspector" in line and "npx" in line:
            assert "npx -y " in line, f"npx without -y asks interactively: {line}"
        assert '"command": "brain"' not in line, "a stdio client needs the absolute path of brain"
        assert "installer ping v1" not in line
    readme = (ROOT / "README.md").read_text()
    assert readme.index("export BRAIN_MCP_TOKEN") < readme.index("/api/onboard.sh | bash")
