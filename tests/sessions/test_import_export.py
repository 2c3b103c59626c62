"""Round trips and entry points: JSON export -> import into a fresh account reproduces every documented field;
Markdown and Cursor exports re-import as the same rules; `brain import` / `brain export` and the REST
endpoints call the one service; a second tenant sees nothing."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from brain.errors import NotFound
from knowledge.cli import imports as import_cli
from knowledge.models import KnowledgeItem
from knowledge.selectors.export import cursor_rules_export, markdown_export
from knowledge.services.create import KnowledgeDraft, knowledge_create
from knowledge.services.curate import knowledge_delete
from knowledge.services.imports import ImportFile, knowledge_import
from knowledge.services.teach import knowledge_teach
from projects.models import User
from projects.scope import Principal
from projects.services.accounts import user_create
from sessions.api.export import export_document
from sessions.cli import export as export_cli
from tests.conftest import Tenant
from tests.support.api import api_error, bearer
from tests.support.bench import run_bench

FIELDS = ("type", "trigger", "content", "rationale", "tags", "source", "stage", "confidence", "success_count",
          "failure_count", "decay_score", "last_used_at", "created_at", "deleted_at", "framework", "language",
          "file_globs", "always_apply")
RULE_FIELDS = ("type", "trigger", "content", "rationale", "tags", "file_globs", "always_apply")


def _brain(t: Tenant) -> None:
    p = t.principal
    knowledge_teach(principal=p, rule="Always pin dependency versions in constraints.txt", type="principle",
                    trigger="adding a dependency", tags=["deps"], rationale="reproducible installs")
    knowledge_teach(principal=p, rule="Never log access tokens or session cookies", type="anti_principle")
    old = knowledge_teach(principal=p, rule="Prefer small pull requests for code review").item
    knowledge_teach(principal=p, rule="Keep pull requests under 300 changed lines", supersedes_knowledge_id=str(old.id))
    gone = knowledge_teach(principal=p, rule="Makefiles are indented with tabs, not spaces", type="reflex").item
    knowledge_delete(principal=p, item_id=gone.id)
    knowledge_create(owner=t.user, project=None, draft=KnowledgeDraft(
        content="Format SQL migrations like this:\n\n```sql\nALTER TABLE x ADD COLUMN y int;\n```", type="recipe",
        trigger="writing a migration", tags=("sql",), source="import", confidence=0.9,
        file_globs=("migrations/**/*.sql",), always_apply=True))
    KnowledgeItem.objects.filter(owner=t.user, type="principle").update(
        success_count=3, failure_count=1, decay_score=0.8, last_used_at=timezone.now() - timedelta(days=2))


def _rows(user: User, fields: tuple[str, ...] = FIELDS) -> list[tuple[Any, ...]]:
    rows = KnowledgeItem.objects.filter(owner=user).select_related("project", "superseded_by")
    return sorted((*(getattr(r, f) for f in fields), r.project.name if r.project else None,
                   r.superseded_by.content if r.superseded_by else None) for r in rows)


def _fresh(email: str) -> Principal:
    return Principal(user=user_create(email=email))


def test_json_export_imports_into_a_fresh_account_with_zero_diff(tenant_a: Tenant, tenant_b: Tenant) -> None:
    _brain(tenant_a)
    document = "".join(export_document(tenant_a.principal, sessions=False)).encode()
    carol = _fresh("carol@c.example")
    out = knowledge_import(principal=carol, files=[ImportFile("brain-export.json", document)]).as_dict()
    assert out["created"] == 6 and out["failed"] == 0
    assert _rows(carol.user) == _rows(tenant_a.user)  # every documented field, project and supersession
    again = knowledge_import(principal=carol, files=[ImportFile("brain-export.json", document)]).as_dict()
    assert again["created"] == 0 and again["skipped"] == 6
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_markdown_and_cursor_exports_reimport_as_the_same_rules(tenant_a: Tenant) -> None:
    _brain(tenant_a)
    markdown = "".join(markdown_export(principal=tenant_a.principal, project=None, file_name="AGENTS.md"))
    assert markdown == "".join(markdown_export(principal=tenant_a.principal, project=None, file_name="AGENTS.md"))
    assert "## Principles" in markdown and "Makefiles" not in markdown  # live rules only, grouped by type
    live = [r[:len(RULE_FIELDS)] for r in _rows(tenant_a.user, (*RULE_FIELDS, "deleted_at"))
            if r[len(RULE_FIELDS)] is None and r[-1] is None]
    for name, files in (("md", [ImportFile("AGENTS.md", markdown.encode())]),
                        ("mdc", [ImportFile(f".cursor/rules/{n}", t.encode())
                                 for n, t in cursor_rules_export(principal=tenant_a.principal, project=None)])):
        dave = _fresh(f"dave-{name}@d.example")
        out = knowledge_import(principal=dave, files=files).as_dict()
        assert out["failed"] == 0 and out["created"] == len(live) == 4
        assert sorted(r[:len(RULE_FIELDS)] for r in _rows(dave.user, RULE_FIELDS)) == sorted(live)


def test_rest_import_and_export(tenant_a: Tenant, tenant_b: Tenant) -> None:
    client = bearer(tenant_a.user_raw)
    files = [SimpleUploadedFile("CLAUDE.md", b"# Rules\n- Always run the linter before committing.\n"),
             SimpleUploadedFile("logo.png", b"\x89PNG\x00\x00")]
    response = client.post("/api/v1/import", {"files": files, "project": "Imported"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["created"], body["failed"], body["project"]) == (1, 1, "Imported")
    assert body["files"][1]["status"] == "failed" and "binary" in body["files"][1]["error"]
    api_error(client.post("/api/v1/import", {}), 400, "VALIDATION")
    md = client.get("/api/v1/export", {"format": "agents-md", "project": "Imported"})
    assert md.status_code == 200 and b"Always run the linter" in md.getvalue()
    zipped = client.get("/api/v1/export", {"format": "cursor-rules"})
    names = zipfile.ZipFile(io.BytesIO(zipped.getvalue())).namelist()
    assert names == [".cursor/rules/brain-principle.mdc"]
    api_error(client.get("/api/v1/export", {"project": "Nope"}), 404, "NOT_FOUND")
    other = bearer(tenant_b.user_raw).get("/api/v1/export", {"format": "agents-md"})
    assert b"linter" not in other.getvalue()


def test_a_request_over_the_size_limit_and_a_file_of_too_many_rules_are_refused(
        tenant_a: Tenant, tenant_b: Tenant, monkeypatch: pytest.MonkeyPatch) -> None:
    from knowledge.importing import formats

    monkeypatch.setattr(formats, "REQUEST_MAX_BYTES", 1000)
    monkeypatch.setattr(formats, "RULES_MAX", 10)
    client = bearer(tenant_a.user_raw)
    big = [SimpleUploadedFile(f"r{n}.md", b"- Always keep rule %d here.\n" % n * 25) for n in range(2)]
    refused = api_error(client.post("/api/v1/import", {"files": big}), 400, "VALIDATION")
    assert "at most 0 MB" in refused["message"] and "several requests" in refused["message"]
    many = b"".join(b"- Always keep rule number %d.\n\n" % n for n in range(11))
    body = client.post("/api/v1/import", {"files": [SimpleUploadedFile("AGENTS.md", many),
                                                    SimpleUploadedFile("CLAUDE.md", b"- Always lint first.\n")]})
    assert body.status_code == 200, body.content
    first, second = body.json()["files"]
    assert first["status"] == "failed" and "11 rules in one file; at most 10" in first["error"]
    assert second["status"] == "imported"
    assert list(KnowledgeItem.objects.filter(owner=tenant_a.user).values_list("content", flat=True)) == [
        "Always lint first."]
    assert not KnowledgeItem.objects.filter(owner=tenant_b.user).exists()


def test_cli_import_json_and_export(tenant_a: Tenant, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".cursor" / "rules").mkdir(parents=True)
    (tmp_path / ".cursor" / "rules" / "a.mdc").write_text("---\nalwaysApply: true\n---\n- Avoid global state.\n")
    (tmp_path / "AGENTS.md").write_text("- Must write a test for every bug fix.\n")
    (tmp_path / "README.md").write_text("- Not a rule file: folders skip it.\n")
    email = tenant_a.user.email
    assert run_bench(import_cli, [str(tmp_path), "--email", email, "--json", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert (dry["created"], dry["merged"], dry["skipped"], dry["failed"], len(dry["files"])) == (2, 0, 0, 0, 2)
    assert not KnowledgeItem.objects.filter(owner=tenant_a.user).exists()
    assert run_bench(import_cli, [str(tmp_path), "--email", email, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == 2
    out = tmp_path / "rules"
    assert run_bench(export_cli, ["--email", email, "--format", "cursor-rules", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["brain-anti-principle-always.mdc", "brain-principle.mdc"]
    assert run_bench(export_cli, ["--email", email, "--no-sessions", "--out", str(tmp_path / "x.json")]) == 0
    assert len(json.loads((tmp_path / "x.json").read_text())["knowledge"]) == 2
    with pytest.raises(NotFound, match="no such file"):  # `brain` prints it and exits 1
        run_bench(import_cli, [str(tmp_path / "missing.md"), "--email", email])
    (tmp_path / "bad.mdc").write_text("---\nglobs: x\n")
    assert run_bench(import_cli, [str(tmp_path / "bad.mdc"), "--email", email]) == 1  # a failed file: exit 1
    assert "FAILED" in capsys.readouterr().out


def test_dashboard_upload_and_download(client: Client, tenant_a: Tenant, tenant_b: Tenant) -> None:
    client.force_login(tenant_a.user)
    page = f"/dashboard/{tenant_a.project.id}/import"
    assert client.get(page).status_code == 200
    upload = SimpleUploadedFile("GEMINI.md", b"## Errors\n- Never swallow exceptions silently.\n")
    response = client.post(page, {"files": [upload]})
    assert response.status_code == 200 and b"1 created, 0 merged, 0 skipped" in response.content
    row = KnowledgeItem.objects.get(owner=tenant_a.user)
    assert row.project == tenant_a.project and row.type == "anti_principle" and row.trigger == "Errors"
    assert client.post(page, {}).status_code == 400
    download = client.get(f"/dashboard/{tenant_a.project.id}/export", {"format": "claude-md"})
    assert download.status_code == 200 and b"Never swallow exceptions" in download.getvalue()
    client.force_login(tenant_b.user)  # another tenant cannot reach the project's pages
    assert client.get(page).status_code == 404
    assert client.get(f"/dashboard/{tenant_a.project.id}/export").status_code == 404
