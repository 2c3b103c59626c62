"""Personal settings pages beside /settings/tokens: the peer card and the audit log of owned orgs."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from brain.errors import BrainError
from dashboard.common import principal_of
from dashboard.forms import PeerCardForm
from knowledge.selectors.dashboard import peer_card_facts
from knowledge.services.peer import peer_card_set
from projects.models import User
from projects.selectors.audit import AUDIT_PAGE, audit_for_owner


@login_required
@require_http_methods(["GET", "POST"])
def peer_card(request: HttpRequest) -> HttpResponse:
    assert isinstance(request.user, User)
    facts = peer_card_facts(principal=principal_of(request))
    initial = "\n".join(f"{k}: {v}" for k, v in facts.items())
    form = PeerCardForm(request.POST or None, initial={"facts": initial})
    if request.method == "POST" and form.is_valid():
        try:
            peer_card_set(user=request.user, facts=form.fact_dict())
        except BrainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, "Peer card saved; it overrides anything learned.")
            return redirect("dash_peer_card")
    return render(request, "dashboard/peer_card.html", {"form": form})


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    assert isinstance(request.user, User)
    events = list(audit_for_owner(user=request.user)[:AUDIT_PAGE])
    return render(request, "dashboard/audit.html", {"events": events})
