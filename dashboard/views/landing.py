"""The front door `/`: what this server is, for a visitor; the dashboard, for someone signed in."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET


@require_GET
def landing(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("dash_home")
    return render(request, "landing.html")
