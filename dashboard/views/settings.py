"""Personal settings pages beside /settings/tokens: the peer card and the audit log of owned orgs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from brain.paging import page_number, page_slice
from dashboard.common import principal_of
from dashboard.forms import PeerCardForm
from knowledge.selectors.dashboard import peer_card_facts
from knowledge.services.peer import peer_card_set
from projects.models import User
from projects.selectors.audit import AUDIT_PAGE, audit_for_owner
from projects.views.attempt import Refused, attempt


@login_required
@require_http_methods(["GET", "POST"])
def peer_card(request: HttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    facts = peer_card_facts(principal=principal_of(request))
    initial = "\n".join(f"{k}: {v}" for k, v in facts.items())
    form = PeerCardForm(request.POST or None, initial={"facts": initial})
    if request.method == "POST" and form.is_valid():
        saved = attempt(request, lambda: peer_card_set(user=user, facts=form.fact_dict()),
                        ok="Peer card saved; it overrides anything learned.", form=form)
        if not isinstance(saved, Refused):
            return redirect("dash_peer_card")
    return render(request, "dashboard/peer_card.html", {"form": form}, status=400 if form.errors else 200)


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    assert isinstance(request.user, User)
    page = page_number(request)
    events, more = page_slice(audit_for_owner(user=request.user), page, AUDIT_PAGE)
    return render(request, "dashboard/audit.html", {"events": events, "page": page, "more": more})
