"""Knowledge pages: search (with why each hit ranks) and filtered list, detail, teach, edit, supersede,
soft delete and restore. Writes go through the knowledge services."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from brain.errors import NotFound
from brain.paging import page_number
from dashboard.common import page_context, principal_of, project_of, text_param
from dashboard.forms import EditForm, KnowledgeSearchForm, SupersedeForm, TeachForm
from knowledge.models import KnowledgeItem
from knowledge.selectors.dashboard import (
    KnowledgeFilters,
    knowledge_list,
    knowledge_one,
    knowledge_sources,
    source_session_ids,
    supersession_chain,
)
from knowledge.selectors.search import decay_floor, knowledge_search
from knowledge.services.curate import (
    knowledge_delete,
    knowledge_edit,
    knowledge_pin,
    knowledge_restore,
    knowledge_supersede,
)
from knowledge.services.promote import knowledge_promote
from knowledge.services.teach import knowledge_teach
from projects.models import Project
from projects.views.attempt import Refused, attempt, login_required_to_act
from sessions.selectors.dashboard import knowledge_applications, sessions_by_ids

SEARCH_LIMIT = 20


def _filters(form: KnowledgeSearchForm) -> KnowledgeFilters:
    data = form.cleaned_data if form.is_valid() else {}
    return KnowledgeFilters(
        type=data.get("type") or "", tag=data.get("tag") or "", min_confidence=data.get("min_confidence"),
        decay=data.get("decay") or "", source=data.get("source") or "", state=data.get("state") or "live",
    )


@login_required
def knowledge_index(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    principal = principal_of(request)
    form = KnowledgeSearchForm(request.GET or None)
    filters, query = _filters(form), (form.cleaned_data.get("q", "") if form.is_valid() else "")
    # The box keeps what was typed even when another field is refused (then nothing is searched).
    context: dict[str, Any] = {"form": form, "query": query, "typed": query or text_param(request, "q", 500),
                               "sources": knowledge_sources(principal=principal, project=project)}
    if query:
        result = knowledge_search(principal=principal, query=query, limit=SEARCH_LIMIT, project_id=project.id,
                                  types=[filters.type] if filters.type else None, explain=True,
                                  tag=filters.tag or "", min_confidence=filters.min_confidence)
        context.update(hits=result.hits, result=result)
    else:
        page = page_number(request)
        rows, more = knowledge_list(principal=principal, project=project, filters=filters, page=page,
                                    floor=decay_floor())
        context.update(rows=rows, page=page, more=more, querystring=_without_page(request))
    return render(request, "dashboard/knowledge_list.html", page_context(request, project, "knowledge", **context))


def _without_page(request: HttpRequest) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


def _item(request: HttpRequest, project: Project, item_id: uuid.UUID) -> KnowledgeItem:
    try:
        return knowledge_one(principal=principal_of(request), project=project, item_id=item_id)
    except NotFound as exc:
        raise Http404(exc.message) from None


@login_required
def knowledge_detail(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    return _detail_page(request, project, _item(request, project, item_id))


def _detail_page(request: HttpRequest, project: Project, item: KnowledgeItem, *, edit_form: EditForm | None = None,
                 supersede_form: SupersedeForm | None = None) -> HttpResponse:
    """The row's page; with a form the person sent that was refused, that form as sent, its errors beside its
    fields and its section open (status 400), so nothing typed is lost."""
    principal = principal_of(request)
    context = page_context(
        request, project, "knowledge", item=item,
        chain=supersession_chain(principal=principal, project=project, item=item),
        applications=knowledge_applications(principal=principal, item=item),
        sources=sessions_by_ids(principal=principal, ids=source_session_ids(item=item)),
        edit_form=edit_form or EditForm(initial=_edit_initial(item), prefix="edit"),
        supersede_form=supersede_form or SupersedeForm(prefix="new"),
        open_edit=edit_form is not None, open_supersede=supersede_form is not None,
    )
    refused = edit_form is not None or supersede_form is not None
    return render(request, "dashboard/knowledge_detail.html", context, status=400 if refused else 200)


def _edit_initial(item: KnowledgeItem) -> dict[str, Any]:
    return {"content": item.content, "trigger": item.trigger, "rationale": item.rationale, "type": item.type,
            "tags": ", ".join(item.tags), "confidence": item.confidence}


@login_required
@require_http_methods(["GET", "POST"])
def knowledge_teach_view(request: HttpRequest, project_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    form = TeachForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        taught = attempt(request, lambda: knowledge_teach(
            principal=principal_of(request), rule=form.cleaned_data["rule"], type=form.cleaned_data["type"],
            trigger=form.cleaned_data["trigger"], rationale=form.cleaned_data["rationale"],
            tags=form.tag_list(), project_id=str(project.id),
        ), ok=lambda t: "Taught. It waits for an owner's review; until then only your sessions get it."
           if t.item.review_status == "pending" else "Taught. It is injected from the next session on.", form=form)
        if not isinstance(taught, Refused):
            return redirect("dash_knowledge_detail", project_id=project.id, item_id=taught.item.id)
    status = 400 if form.errors else 200
    return render(request, "dashboard/knowledge_teach.html", page_context(request, project, "knowledge", form=form),
                  status=status)


@login_required_to_act
@require_POST
def knowledge_edit_view(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    item = _item(request, project, item_id)
    form = EditForm(request.POST, prefix="edit")  # two forms share the page: prefixes keep ids unique
    if not form.is_valid():
        return _detail_page(request, project, item, edit_form=form)
    data = form.cleaned_data
    saved = attempt(request, lambda: knowledge_edit(
        principal=principal_of(request), item_id=item.id, content=data["content"], trigger=data["trigger"],
        rationale=data["rationale"], type=data["type"], tags=form.tag_list(), confidence=data["confidence"]),
        ok="Saved.", form=form)
    if isinstance(saved, Refused):
        return _detail_page(request, project, item, edit_form=form)
    return redirect("dash_knowledge_detail", project_id=project.id, item_id=item.id)


@login_required_to_act
@require_POST
def knowledge_supersede_view(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    item = _item(request, project, item_id)
    form = SupersedeForm(request.POST, prefix="new")
    if not form.is_valid():
        return _detail_page(request, project, item, supersede_form=form)
    new = attempt(request, lambda: knowledge_supersede(
        principal=principal_of(request), item_id=item.id, content=form.cleaned_data["content"],
        trigger=form.cleaned_data["trigger"], rationale=form.cleaned_data["rationale"]),
        ok="Superseded: the new row replaces this one.", form=form)
    if isinstance(new, Refused):
        return _detail_page(request, project, item, supersede_form=form)
    return redirect("dash_knowledge_detail", project_id=project.id, item_id=new.id)


@login_required_to_act
@require_POST
def knowledge_delete_view(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    item = _item(request, project, item_id)
    restore = request.POST.get("restore") == "1"
    service = knowledge_restore if restore else knowledge_delete
    attempt(request, lambda: service(principal=principal_of(request), item_id=item.id),
            ok="Restored." if restore else "Deleted. It no longer reaches sessions; restore it here.")
    return redirect("dash_knowledge_detail", project_id=project.id, item_id=item.id)


@login_required_to_act
@require_POST
def knowledge_promote_view(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    """Moves a row of the caller's from this project to their scope (the REST promote, from the page)."""
    project = project_of(request, project_id)
    item = _item(request, project, item_id)
    attempt(request, lambda: knowledge_promote(principal=principal_of(request), item_id=item.id),
            ok="Promoted: it now reaches every project of yours.")
    return redirect("dash_knowledge_detail", project_id=project.id, item_id=item.id)


@login_required_to_act
@require_POST
def knowledge_pin_view(request: HttpRequest, project_id: uuid.UUID, item_id: uuid.UUID) -> HttpResponse:
    project = project_of(request, project_id)
    item = _item(request, project, item_id)
    pin = request.POST.get("unpin") != "1"
    attempt(request, lambda: knowledge_pin(principal=principal_of(request), item_id=item.id, pinned=pin),
            ok="Pinned: it never fades." if pin else "Unpinned: it fades from its last use like any other row.")
    return redirect("dash_knowledge_detail", project_id=project.id, item_id=item.id)

