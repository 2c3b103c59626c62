"""Import of rule files: the whole awesome-cursorrules corpus, counts on a sample, idempotence, bad inputs,
front matter, MCP memory JSONL, receipts, and a second tenant who sees none of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowledge.importing.formats import parse
from knowledge.importing.markdown import parse_rules
from knowledge.models import KnowledgeItem
from knowledge.services.imports import ImportFile, knowledge_import
from tests.conftest import Tenant

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "data" / "awesome_cursorrules.jsonl"
if not CORPUS.exists():
    CORPUS = Path("/work/shared/data/awesome_cursorrules.jsonl")

CLAUDE_MD = """# Project rules

Intro paragraph describing the repository layout and its purpose.

## Testing
- Always run pytest with `-q` before pushing.
- Never mock our own database layer.
- Prefer factories over fixtures for model rows:
  they keep tests readable.
  > WHY: fixtures hide data.

## Style
- Use these helpers:
  - `make_user()` for users
  - `make_project()` for projects
- Format SQL like this:

```sql
SELECT 1;
```
"""

MDC = """---
description: React component rules
globs: src/**/*.tsx, src/**/*.ts
alwaysApply: true
---
- Avoid default exports in components.
"""


def _corpus() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _import(tenant: Tenant, *files: tuple[str, str | bytes], **kw: object) -> dict:
    data = [ImportFile(n, d.encode() if isinstance(d, str) else d) for n, d in files]
    return knowledge_import(principal=tenant.principal, files=data, **kw).as_dict()  # type: ignore[arg-type]


def test_markdown_splits_headings_bullets_fences_and_types() -> None:
    rules = parse_rules(CLAUDE_MD, tags=("claude-md",))
    by_start = {r.content.split("\n")[0]: r for r in rules}
    assert by_start["Always run pytest with `-q` before pushing."].type == "principle"
    assert by_start["Never mock our own database layer."].type == "anti_principle"
    prefer = by_start["Prefer factories over fixtures for model rows:"]
    assert prefer.type == "heuristic" and "they keep tests readable." in prefer.content
    assert prefer.rationale == "fixtures hide data."
    assert prefer.trigger == "Project rules > Testing" and prefer.tags == ("claude-md", "project-rules", "testing")
    helper = by_start["`make_user()` for users"]
    assert helper.trigger == "Project rules > Style > Use these helpers"  # the lead-in bullet is context
    assert "Use these helpers:" not in by_start
    fence = by_start["Format SQL like this:"]
    assert "```sql\nSELECT 1;\n```" in fence.content  # the code fence stays with its rule
    assert len(rules) == 7  # intro paragraph + 3 testing + 2 helpers + the SQL rule


def test_mdc_front_matter_gives_globs_and_always_apply(tenant_a: Tenant) -> None:
    out = _import(tenant_a, (".cursor/rules/react.mdc", MDC))
    assert out["created"] == 1 and out["failed"] == 0
    row = KnowledgeItem.objects.get(id=out["files"][0]["rules"][0]["id"])
    assert row.file_globs == ["src/**/*.tsx", "src/**/*.ts"] and row.always_apply is True
    assert row.type == "anti_principle" and row.rationale == "React component rules" and row.source == "import"
    assert row.owner == tenant_a.user and row.project == tenant_a.project


def test_mcp_memory_jsonl(tenant_a: Tenant) -> None:
    lines = [{"type": "entity", "name": "Repo", "entityType": "project",
              "observations": ["Uses pnpm workspaces", "Never commit .env files"]},
             {"type": "relation", "from": "Alice", "to": "Repo", "relationType": "maintains"}]
    out = _import(tenant_a, ("memory.jsonl", "\n".join(json.dumps(x) for x in lines)))
    rows = {r.content: r for r in KnowledgeItem.objects.filter(owner=tenant_a.user)}
    assert out["created"] == 3 and set(rows) == {"Uses pnpm workspaces", "Never commit .env files",
                                                 "Alice maintains Repo"}
    assert rows["Never commit .env files"].type == "anti_principle" and rows["Uses pnpm workspaces"].trigger == "Repo"
    assert "mcp-memory" in rows["Alice maintains Repo"].tags


def test_receipts_merge_near_duplicates_and_second_import_creates_nothing(tenant_a: Tenant, tenant_b: Tenant) -> None:
    text = CLAUDE_MD + "\n## Again\n- Always run pytest with `-q` before pushing!\n"
    text += "- Never mock our own database layer.\n"
    first = _import(tenant_a, ("CLAUDE.md", text))
    rules = first["files"][0]["rules"]
    assert first["created"] == 7 and first["merged"] + first["skipped"] == 2
    again = [r for r in rules if r["line"] > 20]
    assert {r["status"] for r in again} <= {"merged", "skipped"}
    merged = [r for r in again if r["status"] == "merged"]
    assert all(r["mergedInto"] in {x["id"] for x in rules if x["status"] == "created"} for r in merged)
    before = sorted(KnowledgeItem.objects.filter(owner=tenant_a.user).values_list(
        "id", "confidence", "success_count", "updated_at"))
    second = _import(tenant_a, ("CLAUDE.md", text))
    assert second["created"] == 0 and second["failed"] == 0 and second["skipped"] + second["merged"] == 9
    after = sorted(KnowledgeItem.objects.filter(owner=tenant_a.user).values_list(
        "id", "confidence", "success_count", "updated_at"))
    assert after == before
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_dry_run_reports_and_changes_nothing(tenant_a: Tenant) -> None:
    out = _import(tenant_a, ("AGENTS.md", CLAUDE_MD), dry_run=True, project_name="Brand New")
    assert out["created"] == 7 and out["dryRun"] is True
    assert not KnowledgeItem.objects.filter(owner=tenant_a.user).exists()
    assert not tenant_a.user.created_projects.filter(name="Brand New").exists() if hasattr(
        tenant_a.user, "created_projects") else True


EXPORT = (b'{"format": "external-brain-export/2", "knowledge": [{"type": "heuristic", "rule": "Always a first rule"},'
          b' {"type": "heuristic", "rule": "Always a second rule", %s}]}')


@pytest.mark.parametrize(("name", "data", "message"), [
    ("logo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"),
    ("CLAUDE.md", b"- caf\xe9 rules\n", "not valid UTF-8"),
    ("broken.mdc", b"---\ndescription: x\n- Always y\n", "never closed"),
    ("bad.mdc", b"---\nthis is not a pair\n---\n- Always y\n", "not `key: value`"),
    ("flag.mdc", b"---\nalwaysApply: sometimes\n---\n- Always y\n", "alwaysApply must be true or false"),
    ("huge.md", b"- Always x\n" * (5 * 1024 * 1024 + 1), "MB limit"),
    ("notes.txt", b"- Always x\n", "unknown format"),
    ("memory.jsonl", b'{"type":"entity","name":"A","observations":["ok"]}\n{"nope": 1}\n', "line 2"),
    ("export.json", b'{"format": "something-else/1"}', "not an External Brain export"),
    # An export's restored fields are checked before anything is written: each of these was a 500 after the file's
    # earlier rows were in.
    ("export.json", EXPORT % b'"confidence": "high"', "knowledge[1].confidence must be a finite number"),
    ("export.json", EXPORT % b'"decayScore": NaN', "knowledge[1].decayScore must be a finite number"),
    ("export.json", EXPORT % b'"successCount": "x"', "knowledge[1].successCount must be a count"),
    ("export.json", EXPORT % b'"createdAt": "2024-13-45T00:00:00Z"', "knowledge[1].createdAt must be an ISO date"),
    ("export.json", EXPORT % b'"tags": 5', "knowledge[1].tags must be a list"),
    ("export.json", EXPORT % (b'"tags": ["' + b"t" * 121 + b'"]'), "knowledge[1].tags: at most 20, each at most 120"),
    ("export.json", EXPORT % (b'"source": "' + b"s" * 41 + b'"'), "knowledge[1].source is 41 characters; at most 40"),
    ("export.json", EXPORT.replace(b'"Always a second rule"', b'"' + b"w" * 200_001 + b'"') % b'"pinned": false',
     "knowledge[1].rule is 200001 characters; at most 200000"),
    ("export.json", EXPORT % b'"stage": "someday"', "knowledge[1].stage must be one of"),
    ("export.json", EXPORT % (b'"framework": "' + b"f" * 61 + b'"'), "knowledge[1].framework is 61 characters"),
    ("export.json", b'{"format": "external-brain-export/2", "projects": 5}', "'projects' must be a list"),
    ("export.json", b'{"format": "external-brain-export/2", "knowledge": ' + b"[" * 100_000, "not valid JSON"),
    ("memory.jsonl", b"[" * 100_000 + b"\n", "line 1 is not JSON"),
])
def test_bad_input_fails_that_file_only(tenant_a: Tenant, name: str, data: bytes, message: str) -> None:
    out = _import(tenant_a, (name, data), ("AGENTS.md", "- Always keep one good rule here.\n"))
    bad, good = out["files"]
    assert bad["status"] == "failed" and message in bad["error"] and bad["created"] == 0
    assert good["status"] == "imported" and out["created"] == 1 and out["failed"] == 1
    assert list(KnowledgeItem.objects.filter(owner=tenant_a.user).values_list("content", flat=True)) == [
        "Always keep one good rule here."]


def test_every_corpus_file_parses_and_a_sample_imports(tenant_a: Tenant, tenant_b: Tenant, settings: Any) -> None:
    # Every one of the 257 files goes through the import's own reader (format detection, UTF-8, front matter);
    # every 10th goes through the whole service, without an embedder (a supported setting) so the test stays
    # short on a busy machine: the vector merge is tested above, the whole-corpus import is timed in
    # docs/import-export.md.
    settings.BRAIN_EMBEDDINGS_PROVIDER = "none"
    records = _corpus()
    assert len(records) == 257
    parsed = [parse(f".cursor/rules/{r['rule_set']}", r["text"].encode()) for r in records]
    assert all(kind == "mdc" for kind, _ in parsed) and sum(len(rules) for _, rules in parsed) > 8000
    empty = [r["rule_set"] for r, (_, rules) in zip(records, parsed, strict=True) if not rules]
    assert empty == ["go-temporal-dsl-prompt-file.mdc"]  # that file is front matter and nothing else
    sample = records[::10]
    out = _import(tenant_a, *((f".cursor/rules/{r['rule_set']}", r["text"]) for r in sample))
    assert out["failed"] == 0, [f["error"] for f in out["files"] if f["error"]][:3]
    for record, receipt in zip(sample, out["files"], strict=True):  # rule counts per file
        assert len(receipt["rules"]) == len(parse_rules(record["text"]))
    assert KnowledgeItem.objects.filter(owner=tenant_a.user).count() == out["created"] > 300
    again = _import(tenant_a, *((f".cursor/rules/{r['rule_set']}", r["text"]) for r in sample))
    assert again["created"] == 0 and again["merged"] == 0 and again["failed"] == 0
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_a_heading_with_a_long_run_of_blanks_parses_in_a_child_process() -> None:
    """`# a` + 20,000 blanks + `b` backtracked for hours in the old heading regex; a child process turns a regression
    into a failure instead of a hung suite (the limit is only a hang guard)."""
    code = ("from knowledge.importing.markdown import parse_rules; import sys; "
            "rules = parse_rules('# a' + ' ' * 20000 + 'b\\n\\n- Always keep this rule\\n'); "
            "sys.exit(0 if [r.content for r in rules] == ['Always keep this rule'] else 1)")
    done = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
