"""The Django admin for superusers. Memory is append-only here too: items are read-only (owners edit
protected items in the console, which versions and audits them) and proposals are decided with
the same review services the console uses."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest

from memory.models import ContextRequest, Fact, Proposal, Publication
from memory.services import proposals_decide


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Fact)
class FactAdmin(ReadOnlyAdmin):
    list_display = ["ref", "project", "kind", "state", "data_class", "taint", "actor", "created_at"]
    list_filter = ["kind", "state", "data_class", "taint", "workspace"]
    search_fields = ["ref", "text", "actor", "source"]
    list_select_related = ["project", "project__workspace"]
    show_full_result_count = False  # a count(*) over a million items per page view is not worth it
    raw_id_fields = ["supersedes", "proposal"]


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyAdmin):
    list_display = [
        "seq",
        "project",
        "op",
        "status",
        "reason",
        "taint",
        "actor",
        "zone",
        "created_at",
    ]
    list_filter = ["status", "op", "reason", "taint", "zone", "workspace"]
    search_fields = ["actor", "request_id", "text", "target"]
    list_select_related = ["workspace", "project"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    actions = ["approve_selected", "reject_selected"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Needed for the actions to show; every field stays read-only (see get_readonly_fields).
        return bool(request.user.is_superuser)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in Proposal._meta.fields]

    def _decide(self, request: HttpRequest, queryset: QuerySet[Proposal], approve: bool) -> None:
        """Decide each selected proposal with the review services and report each outcome.

        The services are the rules: only a member of the proposal's workspace may review it
        (a superuser who is not one is refused), and only a proposal awaiting review can be
        approved (a quarantined one has not been validated yet).
        """
        user = request.user
        if not isinstance(user, User):
            raise PermissionDenied
        note = "Approved in the admin." if approve else "Rejected in the admin."
        decisions = proposals_decide(proposals=queryset, reviewer=user, approve=approve, note=note)
        for seq, message in [*decisions.validating, *decisions.refused]:
            self.message_user(request, f"#{seq}: {message}", messages.WARNING)
        for seq, detail in decisions.conflicts:
            self.message_user(
                request, f"#{seq} became a conflict and was not published: {detail}", messages.WARNING
            )
        verb = "Approved and published" if approve else "Rejected"
        conflicts = len(decisions.conflicts)
        self.message_user(
            request,
            f"{verb} {len(decisions.done)} proposal(s)."
            + (f" {conflicts} conflict(s)." if conflicts else ""),
        )

    @admin.action(description="Approve and publish the selected proposals (taint kept)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description="Reject the selected proposals")
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        self._decide(request, queryset, approve=False)


@admin.register(Publication)
class PublicationAdmin(ReadOnlyAdmin):
    list_display = ["workspace", "version", "compiled_at", "published_count", "changed"]
    list_filter = ["changed", "workspace"]
    list_select_related = ["workspace"]
    date_hierarchy = "compiled_at"


@admin.register(ContextRequest)
class ContextRequestAdmin(ReadOnlyAdmin):
    list_display = [
        "context_id",
        "workspace",
        "project",
        "actor",
        "task",
        "publication_version",
        "created_at",
    ]
    list_filter = ["workspace"]
    search_fields = ["context_id", "actor", "task"]
    list_select_related = ["workspace", "project"]
    date_hierarchy = "created_at"
