"""Guard decisions: what cognibrain_guard answered, newest first, with the rules' blockers and warnings."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from brain.paging import page_number
from dashboard.common import page_context, principal_of, project_of
from knowledge.selectors.guard_log import guard_decisions_list

FILTERS = ("", "blocked", "warned", "allowed")


@login_required
def guard_decisions(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    page = page_number(request)
    only = request.GET.get("only", "")
    only = only if only in FILTERS else ""
    rows, more = guard_decisions_list(principal=principal_of(request), project=project, page=page, only=only)
    context = page_context(request, project, "guard", rows=rows, page=page, more=more, only=only, filters=FILTERS)
    return render(request, "dashboard/guard.html", context)
