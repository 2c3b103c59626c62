"""Sessions: the caller's list with outcome, quality, duration and knowledge counts; one session's timeline."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from brain.durations import human_duration
from brain.errors import NotFound
from brain.paging import page_number
from dashboard.common import page_context, principal_of, project_of, text_param
from sessions.selectors.dashboard import session_clients, session_detail, sessions_list


@login_required
def sessions_index(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    principal = principal_of(request)
    page = page_number(request)
    outcome, client = text_param(request, "outcome"), text_param(request, "client")
    rows, more = sessions_list(principal=principal, project=project, page=page, outcome=outcome, client=client)
    for row in rows:
        row.duration_text = human_duration(row.duration)
    query = request.GET.copy()
    query.pop("page", None)
    context = page_context(
        request, project, "sessions", rows=rows, page=page, more=more, outcome=outcome, client=client,
        clients=session_clients(principal=principal, project=project), querystring=query.urlencode(),
    )
    return render(request, "dashboard/sessions_list.html", context)


@login_required
def session_view(request: HttpRequest, project_id: uuid.UUID, session_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    try:
        detail = session_detail(principal=principal_of(request), project=project, session_id=session_id)
    except NotFound as exc:
        raise Http404(exc.message) from None
    return render(request, "dashboard/session_detail.html", page_context(request, project, "sessions", d=detail))
