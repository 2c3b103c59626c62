"""Dashboard import and export: upload rule files into this project (the same service as `brain import` and
POST /api/v1/import, receipts shown on the page), and download this project's rules in each export format."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.common import page_context, principal_of, project_of
from knowledge.importing.formats import MAX_BYTES, uploads_problem
from knowledge.services.imports import ImportFile, knowledge_import
from sessions.api.export import ExportFormat, export_response

MAX_FILES = 200


@login_required
@require_http_methods(["GET", "POST"])
def import_view(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    report, error = None, ""
    if request.method == "POST":
        uploads = request.FILES.getlist("files")
        if not uploads or len(uploads) > MAX_FILES:
            error = f"choose between 1 and {MAX_FILES} files"
        elif problem := uploads_problem([u.size or 0 for u in uploads]):
            error = problem
        else:
            files = [ImportFile(u.name or "upload", u.read(MAX_BYTES + 1)) for u in uploads]
            report = knowledge_import(principal=principal_of(request), files=files, project_id=str(project.id),
                                      dry_run=bool(request.POST.get("dry_run"))).as_dict()
    context = page_context(request, project, "knowledge", report=report, error=error,
                           formats=[f.value for f in ExportFormat])
    return render(request, "dashboard/import.html", context, status=400 if error else 200)


@login_required
@require_GET
def export_view(request: HttpRequest, project_id: uuid.UUID) -> HttpResponseBase:
    project = project_of(request, project_id)
    fmt = request.GET.get("format", "json")
    if fmt not in {f.value for f in ExportFormat}:
        return HttpResponse(f"unknown format {fmt!r}", status=400, content_type="text/plain")
    return export_response(principal_of(request), fmt, project, sessions=bool(request.GET.get("sessions")))
