"""The workspace's own page: export it (a download) and delete it (typed confirmation, a receipt)."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from console.access import Console, console_view, render_page, service_error, with_csp
from memory.exports import workspace_export_kept
from memory.services import workspace_erase
from workspaces.exceptions import UnforgetterError
from workspaces.models import WorkspaceDeletion
from workspaces.receipts import receipt_lines


@console_view()
def settings_page(request: HttpRequest, console: Console) -> HttpResponse:
    retention = settings.UNFORGETTER["DELETION_RETENTION"]
    return render_page(request, console, "workspace.html", {"retention_days": retention.days})


@console_view(methods=("POST",), owner_only=True)
def export_download(request: HttpRequest, console: Console) -> HttpResponse:
    path = workspace_export_kept(workspace=console.workspace, user=console.user)
    disposition = f'attachment; filename="{path.name}"'
    headers = {"Content-Disposition": disposition}
    return HttpResponse(path.read_bytes(), content_type="application/zip", headers=headers)


@console_view(methods=("POST",), owner_only=True)
def delete(request: HttpRequest, console: Console) -> HttpResponse:
    try:
        receipt = workspace_erase(
            workspace=console.workspace,
            confirm=request.POST.get("confirm", "").strip(),
            deleted_by=console.user,
        )
    except UnforgetterError as exc:
        service_error(request, exc)
        return redirect("console:workspace", console.workspace.slug)
    messages.success(request, f"Deleted workspace {receipt.slug}.")
    return redirect("console:receipt", receipt.pk)


@with_csp
@login_required
@require_http_methods(["GET"])
def receipt(request: HttpRequest, pk: int) -> HttpResponse:
    """A deletion receipt, for the owner who deleted the workspace (nobody else can tell it existed)."""
    found = WorkspaceDeletion.objects.filter(pk=pk, deleted_by=cast(User, request.user)).first()
    if found is None:
        raise Http404("No such receipt.")
    return render(request, "console/receipt.html", {"receipt": found, "lines": receipt_lines(found)})
