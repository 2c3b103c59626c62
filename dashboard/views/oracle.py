"""The oracle page: a question answered from the project's knowledge, with citations.

A question is asked by POST and its answer kept in the browser's session, then shown by the GET the POST redirects
to: reloading the page shows the same answer instead of asking again (with a model configured, every ask is a paid
call) and the browser never offers to send the form twice."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import date
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from dashboard.common import page_context, principal_of, project_of
from dashboard.forms import OracleForm
from projects.models import Project
from projects.views.attempt import Refused, attempt
from sessions.selectors.oracle import Citation, OracleAnswer, oracle_ask

ASKED_KEY = "dashboard.oracle"  # the session key of the last answer, per project


@login_required
@require_http_methods(["GET", "POST"])
def oracle(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    if request.method == "POST":
        form = OracleForm(request.POST)
        if form.is_valid():
            question = form.cleaned_data["question"]
            asked = attempt(request, lambda: oracle_ask(
                principal=principal_of(request), question=question, project_id=str(project.id),
            ), form=form)
            if not isinstance(asked, Refused):
                _keep(request, str(project.id), question, asked)
                return redirect("dash_oracle", project_id=project.id)
        return _page(request, project, form, None)
    question, answer = _kept(request, str(project.id))
    return _page(request, project, OracleForm(initial={"question": question}), answer)


def _page(request: HttpRequest, project: Project, form: OracleForm, answer: OracleAnswer | None) -> HttpResponse:
    return render(request, "dashboard/oracle.html", page_context(request, project, "oracle", form=form, answer=answer))


def _keep(request: HttpRequest, project_id: str, question: str, answer: OracleAnswer) -> None:
    kept = dict(request.session.get(ASKED_KEY) or {})
    kept[project_id] = {"question": question, "answer": _stored(answer)}
    request.session[ASKED_KEY] = kept


def _kept(request: HttpRequest, project_id: str) -> tuple[str, OracleAnswer | None]:
    entry = (request.session.get(ASKED_KEY) or {}).get(project_id)
    if not entry:
        return "", None
    try:
        return entry["question"], _loaded(entry["answer"])
    except (KeyError, TypeError, ValueError):  # written by an older release: ask again
        return "", None


def _stored(answer: OracleAnswer) -> dict[str, Any]:
    """The answer in the session serializer's JSON: ids and days as strings."""
    row = dataclasses.asdict(answer)
    for cite in row["citations"]:
        cite["id"] = str(cite["id"])
        cite["started_on"] = cite["started_on"].isoformat() if cite["started_on"] else None
    return row


def _loaded(row: dict[str, Any]) -> OracleAnswer:
    citations = [Citation(**{**cite, "id": uuid.UUID(cite["id"]),
                             "started_on": date.fromisoformat(cite["started_on"]) if cite["started_on"] else None})
                 for cite in row["citations"]]
    return OracleAnswer(answer=row["answer"], citations=citations, groundedness=row["groundedness"], mode=row["mode"])
