"""The review queue and the proposal page: filters, one decision, bulk decisions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from console import selectors
from console.access import Console, console_view, form_errors, paged, render_page, service_error
from console.diff import word_diff
from console.forms import (
    ApproveForm,
    BulkReviewForm,
    RejectForm,
    ReviewFilterForm,
)
from console.templatetags.inert import marked_html
from memory.models import Proposal
from memory.services import (
    Decisions,
    proposal_approve,
    proposal_reject,
    proposals_decide,
)
from workspaces.exceptions import UnforgetterError


@console_view()
def review_queue(request: HttpRequest, console: Console) -> HttpResponse:
    form = ReviewFilterForm(
        request.GET or None,
        projects=selectors.project_slugs(console.workspace),
        zones=selectors.review_zones(console.workspace),
    )
    filters = form.cleaned_data if form.is_valid() else {}
    page, query = paged(request, selectors.review_queue(console.workspace, filters))
    return render_page(
        request,
        console,
        "queue.html",
        {"form": form, "page": page, "query": query, "reject_form": RejectForm()},
    )


def _seqs(seqs: list[int]) -> str:
    return ", ".join(f"#{seq}" for seq in seqs)


def _plural(n: int, word: str = "proposal") -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _report(request: HttpRequest, decisions: Decisions, approve: bool) -> None:
    """Say what a bulk decision did to each proposal."""
    if decisions.done:
        verb = "Approved and published" if approve else "Rejected"
        messages.success(request, f"{verb} {_plural(len(decisions.done))}: {_seqs(decisions.done)}.")
    for seq, detail in decisions.conflicts:
        messages.warning(request, f"#{seq} became a conflict and was not published: {detail}")
    if decisions.validating:
        validating = [seq for seq, _ in decisions.validating]
        messages.warning(
            request,
            f"Not approved: {_plural(len(validating))} still being validated "
            f"({_seqs(validating)}); approve once they pass, or reject them.",
        )
    for seq, message in decisions.refused:
        messages.error(request, f"#{seq}: {message}")
    if not decisions.done and not decisions.conflicts:
        messages.info(request, "Nothing was published or rejected.")


@console_view(methods=("POST",))
def review_bulk(request: HttpRequest, console: Console) -> HttpResponse:
    held = list(selectors.review_queue(console.workspace, {}).values_list("seq", flat=True))
    form = BulkReviewForm(request.POST, seqs=held)
    if not form.is_valid():
        form_errors(request, form)
        return redirect("console:queue", console.workspace.slug)
    approve = form.cleaned_data["action"] == "approve"
    decisions = proposals_decide(
        proposals=selectors.proposals_for_member(console.workspace, form.cleaned_data["seqs"]),
        reviewer=console.user,
        approve=approve,
        note=form.cleaned_data["note"],
    )
    _report(request, decisions, approve)
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
    return render_page(
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
            "evidence": _evidence_marked(proposal),
            "related": selectors.proposals_related(proposal),
            "previous": selectors.proposal_previous(proposal),
            "produced": list(proposal.facts.select_related("project").order_by("id")),
            "approve_form": ApproveForm(),
            "reject_form": RejectForm(),
        },
    )


def _evidence_marked(proposal: Proposal) -> list[dict[str, Any]]:
    """The proposal's evidence items, each with its ref and text as escaped HTML in which the spans
    the detectors matched there (signals recorded for `evidence[i].ref` / `.text`) are marked."""
    items = proposal.evidence if isinstance(proposal.evidence, list) else []
    return [
        {
            **item,
            **{
                f"{field}_html": marked_html(item.get(field), proposal.signals, f"evidence[{index}].{field}")
                for field in ("ref", "text")
            },
        }
        for index, item in enumerate(items)
        if isinstance(item, dict)
    ]


@console_view(methods=("POST",))
def proposal_approve_view(request: HttpRequest, console: Console, seq: int) -> HttpResponse:
    proposal = selectors.proposal_for_member(console.workspace, seq)
    form = ApproveForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The note is too long.")
    else:
        try:
            decided = proposal_approve(
                proposal=proposal, reviewer=console.user, note=form.cleaned_data["note"]
            )
        except UnforgetterError as exc:
            service_error(request, exc)
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
            service_error(request, exc)
    return redirect("console:proposal", console.workspace.slug, seq)
