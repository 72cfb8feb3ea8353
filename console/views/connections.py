"""Connections and trust zones: issue a token (shown once), revoke and prove it, edit zones."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache

from console import selectors
from console.access import Console, console_view, form_errors, render_page, service_error
from console.forms import (
    IssueTokenForm,
    NewZoneForm,
    RevokeForm,
    ZoneForm,
)
from workspaces import tokens
from workspaces.exceptions import UnforgetterError
from workspaces.selectors import (
    connection_for_bearer,
    credential_refused,
)
from workspaces.services import connection_revoke, token_issue, zone_create, zone_update
from workspaces.snippets import client_snippets


@console_view()
def connections(request: HttpRequest, console: Console) -> HttpResponse:
    rows = list(selectors.connections(console.workspace))
    return render_page(request, console, "connections.html", {"connections": rows})


@never_cache
@console_view(methods=("GET", "POST"), owner_only=True)
def connection_issue(request: HttpRequest, console: Console) -> HttpResponse:
    form = IssueTokenForm(request.POST or None, workspace=console.workspace)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            issued = token_issue(
                workspace=console.workspace,
                actor=data["actor"],
                zone=data["zone"],
                role=data["role"],
                projects=None if data["all_projects"] else data["projects"],
                data_classes=data["data_classes"],
                ttl=data["ttl"],
                label=data["label"],
                issued_by=console.user,
            )
        except UnforgetterError as exc:
            form.add_error(None, exc.message)
        else:
            # The only response that ever carries the raw token; never cached, never stored.
            mcp_url = str(settings.MCP_RESOURCE_URL)
            response = render_page(
                request,
                console,
                "token_issued.html",
                {
                    "connection": issued.connection,
                    "token": issued.token,
                    "mcp_url": mcp_url,
                    "snippets": client_snippets(mcp_url),
                },
            )
            response["Referrer-Policy"] = "no-referrer"
            return response
    return render_page(request, console, "connection_issue.html", {"form": form})


@console_view()
def connection_detail(request: HttpRequest, console: Console, pk: int) -> HttpResponse:
    connection = selectors.connection_for_member(console.workspace, pk)
    refused = credential_refused(connection) if connection.is_revoked else None
    return render_page(
        request,
        console,
        "connection.html",
        {"connection": connection, "refused": refused, "form": RevokeForm()},
    )


def _paste_proof(request: HttpRequest, connection: Any, raw: str) -> None:
    """Run a pasted token through the MCP endpoint's own verifier and say what it answered."""
    if connection.kind != connection.Kind.TOKEN or tokens.digest(raw) != connection.token_digest:
        messages.warning(request, "The pasted token is not this connection's credential; nothing was tested.")
        return
    if connection_for_bearer(raw) is None:
        messages.success(
            request,
            "Tested the pasted token with the MCP endpoint's verifier: refused. "
            "A request carrying it gets HTTP 401.",
        )
    else:
        messages.error(request, "The MCP endpoint's verifier still accepts the pasted token.")


@console_view(methods=("POST",), owner_only=True)
def connection_revoke_view(request: HttpRequest, console: Console, pk: int) -> HttpResponse:
    connection = selectors.connection_for_member(console.workspace, pk)
    form = RevokeForm(request.POST)
    raw = form.cleaned_data["token"] if form.is_valid() else ""
    connection = connection_revoke(connection=connection, revoked_by=console.user)
    messages.success(request, f"Revoked the credential of {connection.actor}.")
    if raw:
        _paste_proof(request, connection, raw)
    return redirect("console:connection", console.workspace.slug, pk)


@console_view(methods=("POST",), owner_only=True)
def connection_verify(request: HttpRequest, console: Console, pk: int) -> HttpResponse:
    connection = selectors.connection_for_member(console.workspace, pk)
    form = RevokeForm(request.POST)
    raw = form.cleaned_data.get("token", "") if form.is_valid() else ""
    if raw:
        _paste_proof(request, connection, raw)
    else:
        messages.error(request, "Paste the token to test it.")
    return redirect("console:connection", console.workspace.slug, pk)


@console_view()
def zones(request: HttpRequest, console: Console) -> HttpResponse:
    rows = selectors.zones(console.workspace)
    forms = [
        (
            zone,
            ZoneForm(
                initial={"trust": zone.trust, "max_token_ttl": zone.max_token_ttl, "review": zone.review},
                prefix=f"z{zone.pk}",
            ),
        )
        for zone in rows
    ]
    new = NewZoneForm(prefix="new")
    return render_page(request, console, "zones.html", {"zones": forms, "new_zone": new})


@console_view(methods=("POST",), owner_only=True)
def zone_new(request: HttpRequest, console: Console) -> HttpResponse:
    form = NewZoneForm(request.POST, prefix="new")
    if form.is_valid():
        try:
            zone = zone_create(
                workspace=console.workspace,
                name=form.cleaned_data["name"],
                trust=form.cleaned_data["trust"],
                max_token_ttl=form.cleaned_data["max_token_ttl"],
                created_by=console.user,
            )
            messages.success(request, f"Created the {zone.name} zone.")
        except UnforgetterError as exc:
            service_error(request, exc)
    else:
        form_errors(request, form, "New zone: ")
    return redirect("console:zones", console.workspace.slug)


@console_view(methods=("POST",), owner_only=True)
def zone_edit(request: HttpRequest, console: Console, pk: int) -> HttpResponse:
    zone = selectors.zone_for_member(console.workspace, pk)
    form = ZoneForm(request.POST, prefix=f"z{zone.pk}")
    if form.is_valid():
        try:
            zone_update(
                zone=zone,
                trust=form.cleaned_data["trust"],
                max_token_ttl=form.cleaned_data["max_token_ttl"],
                review=form.cleaned_data["review"] or None,
                edited_by=console.user,
            )
            messages.success(request, f"Saved the {zone.name} zone.")
        except UnforgetterError as exc:
            service_error(request, exc)
    else:
        form_errors(request, form, f"{zone.name}: ")
    return redirect("console:zones", console.workspace.slug)
