"""The review queue: autoskill proposals, contradictions and action items waiting for a person."""

from __future__ import annotations

import difflib
import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.common import page_context, principal_of, project_of, text_param
from dashboard.forms import RejectForm
from knowledge.models import Proposal, ProposalKind
from knowledge.selectors.dashboard import PAGE, action_items, assignee, contradictions_open, proposals_for
from knowledge.selectors.review import author_label, review_queue
from knowledge.services.curate import contradiction_resolve
from knowledge.services.proposals import proposal_approve, proposal_reject
from knowledge.services.review import knowledge_review_decide
from projects.models import User
from projects.views.attempt import attempt, login_required_to_act


def proposal_patch(proposal: Proposal) -> str:
    """What approving changes, as a unified diff (a skill patch appends; a new row starts from nothing; a merge
    removes the folded rule; a fade keeps the text, its rationale says what changes)."""
    if proposal.kind == ProposalKind.MERGE:
        folded = difflib.unified_diff(proposal.content.splitlines(), [], "rule (now)", "rule (folded into its twin)",
                                      lineterm="")
        return "\n".join(folded)
    if proposal.kind == ProposalKind.FADE:
        return proposal.content
    before = proposal.target.content.splitlines() if proposal.kind == ProposalKind.SKILL_PATCH and proposal.target \
        else []
    after = [*before, f"- {proposal.content.strip()}"] if before else proposal.content.splitlines()
    name = "skill" if before else f"new {proposal.type}"
    return "\n".join(difflib.unified_diff(before, after, f"{name} (now)", f"{name} (approved)", lineterm=""))


@login_required
def review(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    principal = principal_of(request)
    proposals = proposals_for(principal=principal, project=project)
    queue = review_queue(principal=principal, project_id=project.id)
    context = page_context(
        request, project, "review", proposals=[(p, proposal_patch(p)) for p in proposals],
        # The oldest PAGE held rules; the heading counts them all (a team's backlog was one unbounded page).
        held=[(row, author_label(row.owner)) for row in queue[:PAGE]], held_total=queue.count(), page_size=PAGE,
        contradictions=contradictions_open(principal=principal, project=project), reject_form=RejectForm(),
        decided=proposals_for(principal=principal, project=project, status="approved")[:10],
    )
    return render(request, "dashboard/review.html", context)


def _decision(request: HttpRequest) -> bool | None:
    """True to approve, False to reject, None for anything else (a crafted or truncated form changes nothing)."""
    return {"approve": True, "reject": False}.get(request.POST.get("decision", ""))


@login_required_to_act
@require_POST
def proposal_decide(request: HttpRequest, project_id: uuid.UUID, proposal_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    user = request.user
    assert isinstance(user, User)
    decision = _decision(request)
    if decision is None:
        return HttpResponseBadRequest("decision must be approve or reject")
    if decision:
        attempt(request, lambda: proposal_approve(user=user, proposal_id=proposal_id),
                ok="Approved: the rule is live and searchable.")
    else:
        form = RejectForm(request.POST)
        reason = form.cleaned_data["reason"] if form.is_valid() else ""
        attempt(request, lambda: proposal_reject(user=user, proposal_id=proposal_id, reason=reason),
                ok="Rejected; the reason is kept with the proposal.")
    return redirect("dash_review", project_id=project.id)


@login_required_to_act
@require_POST
def member_rule_decide(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    """An owner approves or rejects a member's held rule (the service refuses everyone else)."""
    project = project_of(request, project_id)
    approve = _decision(request)
    if approve is None:
        return HttpResponseBadRequest("decision must be approve or reject")
    attempt(request, lambda: knowledge_review_decide(principal=principal_of(request), item_id=item_id,
                                                     approve=approve),
            ok="Approved: the rule now reaches the whole project." if approve else "Rejected: it reaches no one.")
    return redirect("dash_review", project_id=project.id)


@login_required_to_act
@require_POST
def contradiction_resolve_view(request: HttpRequest, project_id: uuid.UUID, pair_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    attempt(request, lambda: contradiction_resolve(principal=principal_of(request), contradiction_id=pair_id),
            ok="Marked resolved.")
    return redirect("dash_review", project_id=project.id)


@login_required
def actions(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    state = "resolved" if request.GET.get("state") == "resolved" else "open"
    who = text_param(request, "for")
    rows = action_items(principal=principal_of(request), project=project, state=state, assignee_email=who)
    context = page_context(request, project, "actions", state=state, who=who,
                           rows=[(r, assignee(r), "blocker" in r.tags) for r in rows])
    return render(request, "dashboard/actions.html", context)
