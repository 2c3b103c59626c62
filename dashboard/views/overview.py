"""Project switcher and the per-project overview (the learning loop at a glance, as SVG charts)."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from dashboard import charts
from dashboard.common import page_context, principal_of, project_of
from knowledge.selectors.dashboard import health_latest, health_series, knowledge_counts, knowledge_growth
from projects.models import Project
from projects.scope import Principal
from projects.selectors.accounts import projects_visible
from projects.services.accounts import project_ensure_default
from sessions.selectors.dashboard import (
    extraction_funnel,
    injected_used_per_day,
    session_totals,
    sessions_per_day,
)

DAYS = 30


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The first visible project's overview (a new user gets the lazy Default project)."""
    principal = principal_of(request)
    project = projects_visible(principal=principal).first() or project_ensure_default(user=principal.user)
    return redirect("dash_overview", project_id=project.id)


@login_required
def switch(request: HttpRequest) -> HttpResponse:
    """The switcher form's target (works without script): GET ?project=<id>."""
    try:
        project = project_of(request, uuid.UUID(request.GET.get("project", "")))
    except ValueError:
        raise Http404("pick a project from the list") from None
    return redirect("dash_overview", project_id=project.id)


@login_required
def overview(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    principal = principal_of(request)
    context = page_context(
        request, project, "overview",
        totals=session_totals(principal=principal, project=project),
        counts=knowledge_counts(principal=principal, project=project),
        health=health_latest(principal=principal, project=project),
        charts=_charts(principal, project),
    )
    return render(request, "dashboard/overview.html", context)


def _charts(principal: Principal, project: Project) -> list[dict[str, object]]:
    axis = charts.day_axis(DAYS, timezone.localdate())
    per_day = sessions_per_day(principal=principal, project=project, days=DAYS)
    sessions = charts.fill_days(axis, {r.day: r.started for r in per_day})
    quality = {r.day: r.average_quality for r in per_day if r.average_quality is not None}
    rates = {d: (100.0 * used / inj if inj else None) for d, inj, used in
             injected_used_per_day(principal=principal, project=project, days=DAYS)}
    growth = charts.fill_days(axis, dict(knowledge_growth(principal=principal, project=project, days=DAYS)))
    health = {h.as_of: h for h in health_series(principal=principal, project=project, days=DAYS)}
    funnel = extraction_funnel(principal=principal, project=project)
    out: list[dict[str, object]] = [
        {"title": "Sessions per day", "svg": charts.bar_chart(title="Sessions per day", axis=axis, values=sessions)},
        {"title": "Injected → used rate (%)", "svg": charts.line_chart(
            title="Injected to used rate", axis=axis, top=100, unit="%",
            series=[charts.Series("used / injected", [rates.get(d) for d in axis])])},
        {"title": "Quality score trend", "svg": charts.line_chart(
            title="Average session quality score", axis=axis, top=100,
            series=[charts.Series("quality score", [quality.get(d) for d in axis], charts.SECOND)])},
        {"title": "Knowledge growth (rows added per day)", "svg": charts.bar_chart(
            title="Knowledge rows added per day", axis=axis, values=growth)},
    ]
    if any(n for _, n in funnel):
        out.insert(3, {"title": "Extraction funnel (all time)",
                       "svg": charts.funnel_chart(title="Extraction funnel", steps=funnel)})
    if health:
        out.append({"title": "Health: active rows and contradictions", "svg": charts.line_chart(
            title="Knowledge health", axis=axis,
            series=[charts.Series("active", [health[d].active if d in health else None for d in axis]),
                    charts.Series("contradictions", [health[d].contradictions if d in health else None
                                                     for d in axis], "#b3261e")])})
    return out
