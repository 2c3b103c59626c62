"""The oracle page: a question answered from the project's knowledge, with citations."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from dashboard.common import page_context, principal_of, project_of
from dashboard.forms import OracleForm
from projects.views.attempt import Refused, attempt
from sessions.selectors.oracle import oracle_ask


@login_required
@require_http_methods(["GET", "POST"])
def oracle(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    form = OracleForm(request.POST or None)
    answer = None
    if request.method == "POST" and form.is_valid():
        asked = attempt(request, lambda: oracle_ask(
            principal=principal_of(request), question=form.cleaned_data["question"], project_id=str(project.id),
        ), form=form)
        answer = None if isinstance(asked, Refused) else asked
    return render(request, "dashboard/oracle.html", page_context(request, project, "oracle", form=form,
                                                                  answer=answer))
