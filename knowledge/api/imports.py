"""POST /api/v1/import: upload rule files, MCP memory JSONL or a JSON export (multipart, field `files`).

The same service as `brain import` and the dashboard upload; the answer is the same report (counts and
per-file, per-rule receipts). A file that cannot be imported is a failed receipt, not an error: the other
files still import. Errors (no files, unknown project, a project-scoped token naming another project) use
the error envelope."""
# ruff: noqa: N803, N815

from __future__ import annotations

import uuid

from django.http import HttpRequest
from ninja import Field, File, Form, Router, Schema
from ninja.files import UploadedFile

from brain.errors import ValidationFailed
from knowledge.importing.formats import MAX_BYTES, uploads_problem
from knowledge.services.imports import ImportFile, knowledge_import
from projects.api.auth import principal_of
from projects.api.errors import ErrorEnvelope

router = Router(tags=["import"])
MAX_FILES = 500


class RuleReceiptOut(Schema):
    status: str = Field(description="created | merged | skipped")
    type: str
    rule: str = Field(description="the rule's first characters")
    line: int = Field(description="its line in the file (0 for JSON rows)")
    id: uuid.UUID | None = Field(description="the row created, or the row it was merged into")
    mergedInto: uuid.UUID | None = None
    reason: str | None = None


class FileReceiptOut(Schema):
    file: str
    format: str | None
    status: str = Field(description="imported | failed (then nothing of the file was stored)")
    error: str | None
    created: int
    merged: int
    skipped: int
    rules: list[RuleReceiptOut]


class ImportOut(Schema):
    created: int
    merged: int
    skipped: int
    failed: int = Field(description="files that could not be imported")
    dryRun: bool
    project: str | None
    files: list[FileReceiptOut]


def _read(upload: UploadedFile) -> ImportFile:
    # Read one byte over the cap so the service names the file as too large without holding all of it.
    data = upload.read(MAX_BYTES + 1)
    return ImportFile(upload.name or "upload", data)


@router.post("", response={200: ImportOut, 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope,
                           404: ErrorEnvelope}, summary="Import rule files, MCP memory JSONL or a JSON export")
def import_files(request: HttpRequest, files: File[list[UploadedFile]], project: Form[str | None] = None,
                 dryRun: Form[bool] = False) -> ImportOut:
    """Each file becomes rules (Markdown: headings -> trigger and tags, bullets -> rules; `.mdc` front matter ->
    file globs and alwaysApply); near-duplicates merge, identical rules are skipped, so re-importing creates
    nothing. `project` names the target project (created when missing); `dryRun` stores nothing."""
    principal = principal_of(request)
    if not files:
        raise ValidationFailed("send at least one file in the multipart field 'files'")
    if len(files) > MAX_FILES:
        raise ValidationFailed(f"at most {MAX_FILES} files per request; got {len(files)}")
    if problem := uploads_problem([f.size or 0 for f in files]):
        raise ValidationFailed(problem)
    report = knowledge_import(principal=principal, files=[_read(f) for f in files], project_name=project or None,
                              dry_run=dryRun)
    return ImportOut.model_validate(report.as_dict())
