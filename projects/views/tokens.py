"""The token wizard: mint (raw secret shown once, with per-client set-up), list and revoke tokens."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from brain.paging import on_same_page, page_number, page_slice
from projects.clients import CLIENTS, OSES, PROFILES, setup_steps
from projects.forms import TokenMintForm
from projects.models import User
from projects.scope import Principal
from projects.selectors.accounts import TOKENS_PAGE, projects_visible, tokens_of
from projects.services.accounts import token_create, token_revoke
from projects.views.attempt import Refused, attempt, login_required_to_act


def public_base_url(request: HttpRequest) -> str:
    """The server address printed into install commands and installers: BRAIN_PUBLIC_URL when the operator
    set it (a forged Host header must not end up in a command someone pastes), else the address this page
    was served from: on a laptop or LAN install the host a person browses to is the one their agent reaches.
    """
    if settings.PUBLIC_URL_CONFIGURED:
        return str(settings.PUBLIC_URL).rstrip("/")
    return request.build_absolute_uri("/").rstrip("/")


def _wizard(base_url: str, token: str | None) -> list[dict[str, object]]:
    """Every client x OS x tool profile: the page switches between them client-side (the raw token is shown
    once, so a choice cannot cost a round trip)."""
    return [
        {"client": client, "oses": [
            {"id": os_id, "name": os_name, "profiles": [
                {"id": profile, "steps": setup_steps(client_id=client.id, os_id=os_id, base_url=base_url,
                                                     token=token, profile=profile)}
                for profile in PROFILES
            ]}
            for os_id, os_name in OSES.items()
        ]}
        for client in CLIENTS.values()
    ]


MINTED_KEY = "minted_token"


def _chosen_profile(request: HttpRequest) -> str:
    profile = request.GET.get("profile", "brain")
    return profile if profile in PROFILES else "brain"


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    assert isinstance(request.user, User)
    user = request.user
    form = TokenMintForm(request.POST or None, projects=list(projects_visible(principal=Principal(user=user))))
    if request.method == "POST" and form.is_valid():
        created = attempt(request, lambda: token_create(
            user=user, project=form.project(), label=form.cleaned_data["label"], expires_at=form.expires_at()
        ), form=form)
        if not isinstance(created, Refused):
            # Shown by the GET this redirects to, then forgotten: a reload of that page mints nothing more (the
            # POST's own answer, reloaded, minted a token each time) and shows no secret again.
            token, raw = created
            request.session[MINTED_KEY] = {"id": str(token.id), "raw": raw}
            return redirect(f"{reverse('tokens')}?{urlencode({'profile': _chosen_profile(request)})}")
    page = page_number(request)
    listed, more = page_slice(tokens_of(user=user), page, TOKENS_PAGE)
    context: dict[str, object] = {"form": form, "tokens": listed, "page": page, "more": more,
                                  "page_size": TOKENS_PAGE}
    if request.method == "GET":
        context.update(_minted_once(request, user))
    return render(request, "tokens/tokens.html", context)


def _minted_once(request: HttpRequest, user: User) -> dict[str, object]:
    """The token minted by the POST that redirected here, with its raw value and the set-up steps; once."""
    minted = request.session.pop(MINTED_KEY, None)
    token = tokens_of(user=user).filter(pk=minted["id"]).first() if isinstance(minted, dict) else None
    if token is None:
        return {}
    base = public_base_url(request)
    return {"minted": token, "raw": minted["raw"], "wizard": _wizard(base, minted["raw"]), "base_url": base,
            "profiles": PROFILES, "profile": _chosen_profile(request)}


@login_required_to_act
@require_POST
def token_revoke_view(request: HttpRequest, token_id: uuid.UUID) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    attempt(request, lambda: token_revoke(user=user, token_id=token_id),
            ok=lambda token: f"Token {token.prefix}… revoked. Its next request fails.")
    return redirect(on_same_page(reverse("tokens"), request))


@login_required
def setup_guide(request: HttpRequest) -> HttpResponse:
    """The same set-up instructions without a token, for people who already have one; `?profile=cognibrain`
    preselects the Cognibrain tool set."""
    return render(request, "tokens/setup.html", {"wizard": _wizard(public_base_url(request), None),
                                                 "profiles": PROFILES, "profile": _chosen_profile(request)})
