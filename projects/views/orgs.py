"""Org pages: the caller's orgs, a new team, members, roles and invitations by e-mail link."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from brain.addresses import public_link
from brain.errors import NotFound, ValidationFailed
from brain.paging import on_same_page, page_number, page_slice
from projects.forms import InviteForm, OrgCreateForm, RoleForm, client_ip
from projects.models import Membership, Org, User
from projects.selectors.orgs import (
    MEMBERS_PAGE,
    invitations_open,
    memberships_of_org,
    memberships_of_user,
    org_of_member,
    role_in,
)
from projects.services.orgs import (
    invitation_accept,
    invitation_create,
    invitation_revoke,
    membership_remove,
    membership_set_role,
    org_create,
    org_review_set,
)
from projects.services.throttle import mail_allowed
from projects.views.attempt import Refused, attempt, login_required_to_act
from projects.views.mail import mail_sent


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)  # login_required guarantees it
    return request.user


def _org_or_404(user: User, slug: str) -> Org:
    try:
        return org_of_member(user=user, slug=slug)
    except NotFound as exc:
        raise Http404(exc.message) from None


@login_required
@require_http_methods(["GET", "POST"])
def org_list(request: HttpRequest) -> HttpResponse:
    form = OrgCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        org = attempt(request, lambda: org_create(user=_user(request), name=form.cleaned_data["name"]),
                      form=form, field="name")
        if not isinstance(org, Refused):
            return redirect("org_detail", slug=org.slug)
    memberships = memberships_of_user(user=_user(request))
    return render(request, "orgs/list.html", {"memberships": memberships, "form": form})


@login_required
@require_GET
def org_detail(request: HttpRequest, slug: str) -> HttpResponse:
    user = _user(request)
    return _detail_page(request, user, _org_or_404(user, slug))


def _detail_page(request: HttpRequest, user: User, org: Org, invite_form: InviteForm | None = None) -> HttpResponse:
    """The org's page; with a refused invitation, its form as sent with the reason beside it (status 400)."""
    page = page_number(request)
    members, more = page_slice(memberships_of_org(user=user, org=org), page, MEMBERS_PAGE)
    context = {
        "org": org, "role": role_in(user=user, org=org), "members": members, "page": page, "more": more,
        "page_size": MEMBERS_PAGE,
        "invitations": invitations_open(user=user, org=org), "invite_form": invite_form or InviteForm(),
    }
    return render(request, "orgs/detail.html", context, status=400 if invite_form is not None else 200)


def _send_invitation(request: HttpRequest, *, org_name: str, email: str, raw: str, inviter: str) -> None:
    link = public_link(reverse("invitation_accept", args=[raw]))
    body = render_to_string("orgs/invitation_email.txt", {"org": org_name, "link": link, "inviter": inviter})
    # A subject is one line (Django refuses a line break in it); orgs named before names were kept to one line.
    if mail_sent(subject=f"Join {' '.join(org_name.split())} on External Brain", body=body, to=email,
                 purpose="invitation"):
        messages.success(request, f"Invitation sent to {email}.")
    else:  # the invitation is stored: the inviter can pass its link on instead of inviting twice
        messages.warning(request, f"Invitation saved, but the mail to {email} could not be sent. Send them this "
                                  f"link yourself; it works once: {link}")


@login_required_to_act
@require_POST
def org_invite(request: HttpRequest, slug: str) -> HttpResponse:
    user = _user(request)
    org = _org_or_404(user, slug)
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _detail_page(request, user, org, form)
    if not mail_allowed(to=form.cleaned_data["email"], ip=client_ip(request)):
        form.add_error(None, "Too many invitation mails to this address or from here in the last hour; "
                       "try again later.")
        return _detail_page(request, user, org, form)
    created = attempt(request, lambda: invitation_create(user=user, org=org, **form.cleaned_data), form=form)
    if isinstance(created, Refused):
        return _detail_page(request, user, org, form)
    invitation, raw = created
    _send_invitation(request, org_name=org.name, email=invitation.email, raw=raw, inviter=user.email)
    return redirect("org_detail", slug=slug)


@login_required_to_act
@require_POST
def org_invitation_revoke(request: HttpRequest, slug: str, invitation_id: uuid.UUID) -> HttpResponse:
    user = _user(request)
    attempt(request, lambda: invitation_revoke(user=user, org=_org_or_404(user, slug), invitation_id=invitation_id),
            ok="Invitation revoked.")
    return redirect("org_detail", slug=slug)


@login_required_to_act
@require_POST
def org_member_role(request: HttpRequest, slug: str, membership_id: uuid.UUID) -> HttpResponse:
    user = _user(request)
    form = RoleForm(request.POST)

    def change() -> Membership:
        if not form.is_valid():
            raise ValidationFailed("choose owner or member")
        return membership_set_role(user=user, org=_org_or_404(user, slug), membership_id=membership_id,
                                   role=form.cleaned_data["role"])

    attempt(request, change, ok="Role changed.")
    return redirect(on_same_page(reverse("org_detail", args=[slug]), request))


@login_required_to_act
@require_POST
def org_member_remove(request: HttpRequest, slug: str, membership_id: uuid.UUID) -> HttpResponse:
    user = _user(request)
    removed = attempt(request, lambda: membership_remove(user=user, org=_org_or_404(user, slug),
                                                         membership_id=membership_id))
    back = on_same_page(reverse("org_detail", args=[slug]), request)
    if isinstance(removed, Refused):
        return redirect(back)
    if removed.user_id == user.pk:
        messages.success(request, "You left the org.")
        return redirect("org_list")
    messages.success(request, f"{removed.user.email} was removed.")
    return redirect(back)


@login_required_to_act
@require_POST
def org_review_toggle(request: HttpRequest, slug: str) -> HttpResponse:
    """Owners switch review of members' rules; the checkbox's absence means off."""
    user = _user(request)
    required = request.POST.get("require_member_review") == "on"
    attempt(request, lambda: org_review_set(user=user, org=_org_or_404(user, slug), required=required),
            ok="Members' new rules now wait for an owner's review." if required
            else "Members' rules reach the team without review.")
    return redirect("org_detail", slug=slug)


@login_required
@require_http_methods(["GET", "POST"])
def invitation_accept_view(request: HttpRequest, raw: str) -> HttpResponse:
    if request.method == "GET":
        return render(request, "orgs/invitation_accept.html", {"raw": raw})
    form = forms.Form(request.POST)  # the page's form is one button: it carries only the refusal
    membership = attempt(request, lambda: invitation_accept(user=_user(request), raw=raw),
                         ok=lambda joined: f"You joined {joined.org.name}.", form=form)
    if isinstance(membership, Refused):
        context = {"raw": raw, "form": form}
        return render(request, "orgs/invitation_accept.html", context, status=membership.error.http_status)
    return redirect("org_detail", slug=membership.org.slug)
