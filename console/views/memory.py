"""The memory browser, and owners' edits of protected items."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from console import selectors
from console.access import Console, console_view, paged, render_page, service_error
from console.forms import (
    MemoryFilterForm,
    OwnerCreateForm,
    OwnerEditForm,
)
from memory.services import (
    fact_owner_create,
    fact_owner_edit,
)
from workspaces.exceptions import UnforgetterError
from workspaces.models import DataClass


@console_view()
def memory(request: HttpRequest, console: Console) -> HttpResponse:
    projects = selectors.project_slugs(console.workspace)
    form = MemoryFilterForm(request.GET or None, projects=projects)
    filters = form.cleaned_data if form.is_valid() else {}
    page, query = paged(request, selectors.memory_items(console.workspace, filters))
    return render_page(request, console, "memory.html", {"form": form, "page": page, "query": query})


@console_view()
def memory_item(request: HttpRequest, console: Console, ref: str) -> HttpResponse:
    fact = selectors.fact_for_member(console.workspace, ref)
    editable = console.is_owner and fact.is_protected and fact.state == "active"
    return render_page(
        request,
        console,
        "memory_item.html",
        {
            "fact": fact,
            "history": selectors.fact_history(fact),
            "proposals": selectors.fact_proposals(fact),
            "editable": editable,
            "form": OwnerEditForm(initial={"text": fact.text, "source": fact.source}) if editable else None,
        },
    )


@console_view(methods=("POST",), owner_only=True)
def memory_edit(request: HttpRequest, console: Console, ref: str) -> HttpResponse:
    fact = selectors.fact_for_member(console.workspace, ref)
    form = OwnerEditForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the item's text (at most 8,000 characters).")
        return redirect("console:item", console.workspace.slug, ref)
    try:
        new = fact_owner_edit(
            fact=fact, text=form.cleaned_data["text"], source=form.cleaned_data["source"], editor=console.user
        )
    except UnforgetterError as exc:
        service_error(request, exc)
        return redirect("console:item", console.workspace.slug, ref)
    messages.success(request, f"Saved a new version ({new.ref}); {ref} is kept in its history.")
    return redirect("console:item", console.workspace.slug, new.ref)


@console_view(methods=("GET", "POST"), owner_only=True)
def memory_new(request: HttpRequest, console: Console) -> HttpResponse:
    projects = selectors.project_slugs(console.workspace)
    form = OwnerCreateForm(
        request.POST or None, projects=projects, initial={"project": request.GET.get("project")}
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        project = selectors.project_for_member(console.workspace, data["project"])
        try:
            fact = fact_owner_create(
                project=project,
                kind=data["kind"],
                text=data["text"],
                editor=console.user,
                data_class=data["data_class"] or None,
                source=data["source"],
            )
        except UnforgetterError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Added {fact.ref}.")
            return redirect("console:item", console.workspace.slug, fact.ref)
    return render_page(
        request, console, "memory_new.html", {"form": form, "restricted": DataClass.RESTRICTED}
    )
