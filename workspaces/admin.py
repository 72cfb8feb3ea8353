"""The Django admin for superusers. Credential and zone changes go through the same services as the
console, so they are audited the same way; digests and timestamps are read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from workspaces.login import ThrottledAdminAuthenticationForm
from workspaces.models import AuditEvent, Connection, Membership, Project, TrustZone, Workspace
from workspaces.services import connection_revoke, zone_update

admin.site.site_header = "Unforgetter administration"
admin.site.site_title = "Unforgetter admin"
admin.site.index_title = "Superuser tools (owners use the console at /console/)"
admin.site.login_form = ThrottledAdminAuthenticationForm  # the console's sign-in throttle
admin.site.enable_nav_sidebar = False  # the changelists are wide; the sidebar squeezed their columns


class MembershipInline(admin.TabularInline[Membership, Workspace]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    readonly_fields = ["created_at"]


class TrustZoneInline(admin.TabularInline[TrustZone, Workspace]):
    model = TrustZone
    extra = 0
    fields = ["name", "trust", "max_token_ttl", "review"]
    readonly_fields = ["name", "trust", "max_token_ttl", "review"]
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin[Workspace]):
    list_display = ["slug", "name", "publish_cadence", "review_every_proposal", "created_at"]
    list_filter = ["review_every_proposal"]
    search_fields = ["slug", "name"]
    readonly_fields = ["created_at"]
    inlines = [MembershipInline, TrustZoneInline]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ["slug", "name", "workspace", "data_class", "updated_at"]
    list_filter = ["data_class", "workspace"]
    search_fields = ["slug", "name", "workspace__slug"]
    list_select_related = ["workspace"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(TrustZone)
class TrustZoneAdmin(admin.ModelAdmin[TrustZone]):
    list_display = ["name", "workspace", "trust", "max_token_ttl", "review"]
    list_filter = ["trust", "review", "workspace"]
    search_fields = ["name", "workspace__slug"]
    list_select_related = ["workspace"]
    fields = ["workspace", "name", "trust", "max_token_ttl", "review"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["workspace", "name"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: TrustZone, form: Any, change: bool) -> None:
        if change:
            zone_update(
                zone=obj,
                trust=obj.trust,
                max_token_ttl=obj.max_token_ttl,
                review=obj.review,
                edited_by=request.user,  # type: ignore[arg-type]
            )
        else:
            super().save_model(request, obj, form, change)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", "workspace"]
    search_fields = ["user__username", "workspace__slug"]
    list_select_related = ["user", "workspace"]
    autocomplete_fields = ["user"]
    readonly_fields = ["created_at"]


class ConnectionStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "Live"), ("revoked", "Revoked"), ("expired", "Expired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Connection]) -> QuerySet[Connection]:
        now = timezone.now()
        if self.value() == "live":
            return queryset.filter(revoked_at__isnull=True, expires_at__gt=now)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        if self.value() == "expired":
            return queryset.filter(revoked_at__isnull=True, expires_at__lte=now)
        return queryset


@admin.register(Connection)
class ConnectionAdmin(admin.ModelAdmin[Connection]):
    list_display = ["actor", "workspace", "kind", "zone", "role", "state", "last_used_at", "expires_at"]
    list_filter = [ConnectionStateFilter, "kind", "role", "zone__trust", "workspace"]
    search_fields = ["actor", "label", "workspace__slug", "token_hint"]
    list_select_related = ["workspace", "zone"]
    date_hierarchy = "created_at"
    actions = ["revoke_selected"]
    readonly_fields = [
        "workspace",
        "kind",
        "actor",
        "zone",
        "role",
        "all_projects",
        "projects",
        "data_classes",
        "token_digest",
        "token_hint",
        "oauth_application",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    ]
    fields = ["label", *readonly_fields]

    @admin.display(description="State")
    def state(self, obj: Connection) -> str:
        if obj.revoked_at is not None:
            return f"revoked {obj.revoked_at:%Y-%m-%d %H:%M}"
        return "live" if obj.is_usable() else "expired"

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Tokens are shown once: only the console and `manage.py issue_token` can show them.
        return False

    @admin.action(description="Revoke the selected credentials")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[Connection]) -> None:
        count = 0
        for connection in queryset.filter(revoked_at__isnull=True):
            connection_revoke(connection=connection, revoked_by=request.user)  # type: ignore[arg-type]
            count += 1
        self.message_user(request, f"Revoked {count} credential(s).", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    list_display = ["at", "workspace", "action", "actor", "target"]
    list_filter = ["action", "workspace"]
    search_fields = ["actor", "target"]
    list_select_related = ["workspace"]
    date_hierarchy = "at"
    readonly_fields = ["workspace", "at", "action", "actor", "connection", "user", "target", "detail"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
