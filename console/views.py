"""The owner console. Thin views: resolve the member's workspace, parse, call one selector or
service, render.

Every workspace-scoped view goes through `console_view`, which resolves the workspace with
`workspace_for_user` (404 for anyone who is not a member, never 403) and, for owner-only actions,
refuses reviewers with 403. Every object lookup inside is filtered by that workspace, so another
workspace's objects are 404 too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, wraps
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from console import selectors
from console.diff import word_diff
from console.forms import (
    ApproveForm,
    AuditFilterForm,
    BulkReviewForm,
    IssueTokenForm,
    MemoryFilterForm,
    OwnerCreateForm,
    OwnerEditForm,
    RejectForm,
    ReviewFilterForm,
    RevokeForm,
    ZoneForm,
)
from memory.models import Proposal
from memory.services import fact_owner_create, fact_owner_edit, proposal_approve, proposal_reject
from workspaces import tokens
from workspaces.exceptions import NotFound, UnforgetterError
from workspaces.models import DataClass, Membership, Project, TrustZone, Workspace
from workspaces.selectors import (
    connection_for_bearer,
    credential_refused,
    membership_for,
    workspace_for_user,
    workspaces_for_user,
)
from workspaces.services import connection_revoke, token_issue, zone_update
from workspaces.snippets import client_snippets

PAGE_SIZE = 50

# Console pages load only their own script and stylesheet. Agent-written text is escaped anyway;
# this is the second wall: no inline script, no remote image beacon, no framing, no form posting
# elsewhere, even if an escaping bug ever let markup through.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def with_csp(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return wrapped


@dataclass
class Console:
    """The member's view of one workspace, passed to every scoped view and template."""

    workspace: Workspace
    membership: Membership
    user: User

    @property
    def is_owner(self) -> bool:
        return self.membership.role == Membership.Role.OWNER

    @cached_property
    def pending_review(self) -> int:
        return Proposal.objects.filter(workspace=self.workspace, status__in=selectors.REVIEW_STATUSES).count()

    def url(self, name: str, *args: Any) -> str:
        return reverse(f"console:{name}", args=[self.workspace.slug, *args])


View = Callable[..., HttpResponse]


def console_view(*, methods: tuple[str, ...] = ("GET",), owner_only: bool = False) -> Callable[[View], View]:
    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            user = cast(User, request.user)
            try:
                workspace = workspace_for_user(user, slug)
            except NotFound:
                raise Http404("No such workspace.") from None
            membership = membership_for(user, workspace)
            if membership is None:
                raise Http404("No such workspace.")
            console = Console(workspace=workspace, membership=membership, user=user)
            if owner_only and not console.is_owner:
                raise PermissionDenied("Only the workspace's owners can do this.")
            try:
                return view(request, console, *args, **kwargs)
            except NotFound as exc:
                raise Http404(exc.message) from None

        return cast(View, with_csp(login_required(require_http_methods(list(methods))(wrapped))))

    return decorate


def _render(request: HttpRequest, console: Console, template: str, context: dict[str, Any]) -> HttpResponse:
    return render(request, f"console/{template}", {"console": console, **context})


def _service_error(request: HttpRequest, exc: UnforgetterError) -> None:
    messages.error(request, exc.message)


# --- Home and overview ---------------------------------------------------------------------------


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
    return _render(request, console, "overview.html", {"summary": summary, "activity": activity})


# --- Review ------------------------------------------------------------------------------------------


def _project_slugs(workspace: Workspace) -> list[str]:
    return list(Project.objects.filter(workspace=workspace).order_by("slug").values_list("slug", flat=True))


@console_view()
def review_queue(request: HttpRequest, console: Console) -> HttpResponse:
    form = ReviewFilterForm(
        request.GET or None,
        projects=_project_slugs(console.workspace),
        zones=selectors.review_zones(console.workspace),
    )
    filters = form.cleaned_data if form.is_valid() else {}
    page = Paginator(selectors.review_queue(console.workspace, filters), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = request.GET.copy()
    query.pop("page", None)
    return _render(
        request,
        console,
        "queue.html",
        {"form": form, "page": page, "query": query.urlencode(), "reject_form": RejectForm()},
    )


def _seqs(seqs: list[int]) -> str:
    return ", ".join(f"#{seq}" for seq in seqs)


def _plural(n: int, word: str = "proposal") -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass
class Outcomes:
    """What a bulk decision did to each proposal, reported item by item."""

    done: list[int] = field(default_factory=list)
    conflicts: list[tuple[int, str]] = field(default_factory=list)
    validating: list[int] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)

    def report(self, request: HttpRequest, approve: bool) -> None:
        if self.done:
            verb = "Approved and published" if approve else "Rejected"
            messages.success(request, f"{verb} {_plural(len(self.done))}: {_seqs(self.done)}.")
        for seq, detail in self.conflicts:
            messages.warning(request, f"#{seq} became a conflict and was not published: {detail}")
        if self.validating:
            messages.warning(
                request,
                f"Not approved: {_plural(len(self.validating))} still being validated "
                f"({_seqs(self.validating)}); approve once they pass, or reject them.",
            )
        for seq, message in self.failed:
            messages.error(request, f"#{seq}: {message}")
        if not self.done and not self.conflicts:
            messages.info(request, "Nothing was published or rejected.")


@console_view(methods=("POST",))
def review_bulk(request: HttpRequest, console: Console) -> HttpResponse:
    held = list(selectors.review_queue(console.workspace, {}).values_list("seq", flat=True))
    form = BulkReviewForm(request.POST, seqs=held)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return redirect("console:queue", console.workspace.slug)
    approve = form.cleaned_data["action"] == "approve"
    note = form.cleaned_data["note"]
    outcomes = Outcomes()
    for seq in sorted(form.cleaned_data["seqs"]):
        proposal = selectors.proposal_for_member(console.workspace, seq)
        if approve and proposal.status == Proposal.Status.QUARANTINED:
            outcomes.validating.append(seq)
            continue
        try:
            if approve:
                decided = proposal_approve(proposal=proposal, reviewer=console.user, note=note)
            else:
                decided = proposal_reject(proposal=proposal, reviewer=console.user, note=note)
        except UnforgetterError as exc:
            outcomes.failed.append((seq, exc.message))
            continue
        if approve and decided.status != Proposal.Status.PUBLISHED:
            outcomes.conflicts.append((seq, decided.reason_detail or decided.get_reason_display()))
        else:
            outcomes.done.append(seq)
    outcomes.report(request, approve)
    return redirect("console:queue", console.workspace.slug)


@console_view()
def proposal_detail(request: HttpRequest, console: Console, seq: int) -> HttpResponse:
    proposal = selectors.proposal_for_member(console.workspace, seq)
    target = selectors.proposal_target(proposal)
    diff = None
    if target is not None and proposal.op == Proposal.Op.UPDATE_FACT:
        diff = word_diff(target.text, proposal.text)
    held = proposal.status in selectors.REVIEW_STATUSES
    # Only when the decision is still open does it matter whether the base moved on meanwhile:
    # approving then records a conflict rather than publishing (see proposal_approve).
    moved_on = held and target is not None and not selectors.target_is_current(target)
    return _render(
        request,
        console,
        "proposal.html",
        {
            "proposal": proposal,
            "target": target,
            "diff": diff,
            "held": held,
            "validating": proposal.status == Proposal.Status.QUARANTINED,
            "moved_on": moved_on,
            "successor": selectors.target_successor(target) if moved_on and target else None,
            "evidence": proposal.evidence if isinstance(proposal.evidence, list) else [],
            "related": selectors.proposals_related(proposal),
            "previous": selectors.proposal_previous(proposal),
            "produced": list(proposal.facts.select_related("project").order_by("id")),
            "approve_form": ApproveForm(),
            "reject_form": RejectForm(),
        },
    )


@console_view(methods=("POST",))
def proposal_approve_view(request: HttpRequest, console: Console, seq: int) -> HttpResponse:
    proposal = selectors.proposal_for_member(console.workspace, seq)
    form = ApproveForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The note is too long.")
    elif proposal.status == Proposal.Status.QUARANTINED:
        messages.warning(
            request,
            f"#{seq} is still being validated by the consolidator; it can be approved once it passes.",
        )
    else:
        try:
            decided = proposal_approve(
                proposal=proposal, reviewer=console.user, note=form.cleaned_data["note"]
            )
        except UnforgetterError as exc:
            _service_error(request, exc)
        else:
            if decided.status == Proposal.Status.PUBLISHED:
                messages.success(request, f"Approved #{seq}: it is published (its taint is kept).")
            else:
                messages.warning(
                    request,
                    f"#{seq} was not published: it became a conflict. {decided.reason_detail}",
                )
    return redirect("console:proposal", console.workspace.slug, seq)


@console_view(methods=("POST",))
def proposal_reject_view(request: HttpRequest, console: Console, seq: int) -> HttpResponse:
    proposal = selectors.proposal_for_member(console.workspace, seq)
    form = RejectForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give a reason for rejecting (at most 2,000 characters).")
    else:
        try:
            proposal_reject(proposal=proposal, reviewer=console.user, note=form.cleaned_data["note"])
            messages.success(request, f"Rejected #{seq}.")
        except UnforgetterError as exc:
            _service_error(request, exc)
    return redirect("console:proposal", console.workspace.slug, seq)


# --- Connections ----------------------------------------------------------------------------------


@console_view()
def connections(request: HttpRequest, console: Console) -> HttpResponse:
    rows = list(selectors.connections(console.workspace))
    return _render(request, console, "connections.html", {"connections": rows})


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
            response = _render(
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
    return _render(request, console, "connection_issue.html", {"form": form})


@console_view()
def connection_detail(request: HttpRequest, console: Console, pk: int) -> HttpResponse:
    connection = selectors.connection_for_member(console.workspace, pk)
    refused = credential_refused(connection) if connection.is_revoked else None
    return _render(
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
    rows = TrustZone.objects.filter(workspace=console.workspace).order_by("name")
    forms = [
        (
            zone,
            ZoneForm(
                initial={"trust": zone.trust, "max_token_ttl": zone.max_token_ttl}, prefix=f"z{zone.pk}"
            ),
        )
        for zone in rows
    ]
    return _render(request, console, "zones.html", {"zones": forms})


@console_view(methods=("POST",), owner_only=True)
def zone_edit(request: HttpRequest, console: Console, pk: int) -> HttpResponse:
    zone = TrustZone.objects.filter(workspace=console.workspace, pk=pk).first()
    if zone is None:
        raise Http404("No such trust zone.")
    form = ZoneForm(request.POST, prefix=f"z{zone.pk}")
    if form.is_valid():
        try:
            zone_update(
                zone=zone,
                trust=form.cleaned_data["trust"],
                max_token_ttl=form.cleaned_data["max_token_ttl"],
                edited_by=console.user,
            )
            messages.success(request, f"Saved the {zone.name} zone.")
        except UnforgetterError as exc:
            _service_error(request, exc)
    else:
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"{zone.name}: {error}")
    return redirect("console:zones", console.workspace.slug)


# --- Memory -----------------------------------------------------------------------------------------


@console_view()
def memory(request: HttpRequest, console: Console) -> HttpResponse:
    projects = _project_slugs(console.workspace)
    form = MemoryFilterForm(request.GET or None, projects=projects)
    filters = form.cleaned_data if form.is_valid() else {}
    page = Paginator(selectors.memory_items(console.workspace, filters), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = request.GET.copy()
    query.pop("page", None)
    return _render(request, console, "memory.html", {"form": form, "page": page, "query": query.urlencode()})


@console_view()
def memory_item(request: HttpRequest, console: Console, ref: str) -> HttpResponse:
    fact = selectors.fact_for_member(console.workspace, ref)
    editable = console.is_owner and fact.is_protected and fact.state == "active"
    return _render(
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
        _service_error(request, exc)
        return redirect("console:item", console.workspace.slug, ref)
    messages.success(request, f"Saved a new version ({new.ref}); {ref} is kept in its history.")
    return redirect("console:item", console.workspace.slug, new.ref)


@console_view(methods=("GET", "POST"), owner_only=True)
def memory_new(request: HttpRequest, console: Console) -> HttpResponse:
    projects = _project_slugs(console.workspace)
    form = OwnerCreateForm(
        request.POST or None, projects=projects, initial={"project": request.GET.get("project")}
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        project = Project.objects.get(workspace=console.workspace, slug=data["project"])
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
    return _render(request, console, "memory_new.html", {"form": form, "restricted": DataClass.RESTRICTED})


# --- Audit --------------------------------------------------------------------------------------------


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
    return _render(request, console, "audit.html", {"form": form, "entries": entries, "older": older})
