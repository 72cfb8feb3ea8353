"""The console's home, the workspace overview and the audit log."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_http_methods

from console import selectors
from console.access import PAGE_SIZE, Console, console_view, render_page, with_csp
from console.forms import (
    AuditFilterForm,
)
from workspaces.selectors import (
    workspaces_for_user,
)


@with_csp
@login_required
@require_http_methods(["GET"])
def home(request: HttpRequest) -> HttpResponse:
    workspaces = list(workspaces_for_user(cast(User, request.user)).order_by("slug"))
    if len(workspaces) == 1:
        return redirect("console:overview", workspaces[0].slug)
    return render(request, "console/home.html", {"workspaces": workspaces})


@console_view()
def overview(request: HttpRequest, console: Console) -> HttpResponse:
    summary = selectors.overview(console.workspace)
    console.__dict__["pending_review"] = summary.pending_review  # fills the cached_property: counted once
    activity = selectors.audit_timeline(console.workspace, limit=8)
    return render_page(request, console, "overview.html", {"summary": summary, "activity": activity})


@console_view()
def audit(request: HttpRequest, console: Console) -> HttpResponse:
    form = AuditFilterForm(request.GET or None, actions=selectors.TIMELINE_ACTIONS)
    filters = form.cleaned_data if form.is_valid() else {}
    try:
        before = parse_datetime(request.GET.get("before", ""))
    except ValueError:
        before = None
    entries = selectors.audit_timeline(
        console.workspace,
        action=filters.get("action", ""),
        actor=filters.get("actor", ""),
        before=before,
        limit=PAGE_SIZE,
    )
    older = None
    if len(entries) == PAGE_SIZE:
        query = request.GET.copy()
        query["before"] = entries[-1].at.isoformat()
        older = query.urlencode()
    return render_page(request, console, "audit.html", {"form": form, "entries": entries, "older": older})
