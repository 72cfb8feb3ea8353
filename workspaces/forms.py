"""The OAuth consent form: DOT's hidden authorization fields plus the scope of the Connection."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from oauth2_provider.forms import AllowForm

from workspaces.models import Connection, DataClass, Membership, Project, TrustZone, Workspace
from workspaces.oauth import is_mcp_resource


def owned_workspaces(user: User) -> list[Workspace]:
    """Workspaces the user may grant access to: those they own."""
    return list(
        Workspace.objects.filter(memberships__user=user, memberships__role=Membership.Role.OWNER)
        .distinct()
        .order_by("slug")
    )


def guess_zone(zones: list[TrustZone], client_name: str) -> str:
    """The zone named in the client's name (Claude Code -> claude), else none: the owner chooses."""
    lowered = client_name.lower()
    return next((zone.name for zone in zones if zone.name in lowered), "")


class ConsentForm(AllowForm):
    """Approve (or deny) an OAuth client, choosing the authority its tokens will carry.

    The scope fields are checked only when the owner approves: denying needs nothing chosen.
    Every choice is limited to one workspace the user owns; restricted projects and the
    restricted data class are never offered.
    """

    workspace = forms.CharField(required=False, widget=forms.HiddenInput())
    all_projects = forms.BooleanField(
        required=False, initial=True, label="All projects of the allowed data classes, including future ones"
    )
    projects = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Projects"
    )
    data_classes = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Data classes",
        choices=[(c, DataClass(c).label) for c in DataClass.grantable()],
        initial=[DataClass.PUBLIC, DataClass.INTERNAL],
    )
    role = forms.ChoiceField(
        required=False,
        choices=[
            (Connection.Role.READER, "Reader: list, get context, search"),
            (Connection.Role.CONTRIBUTOR, "Contributor: also propose memory changes"),
        ],
        initial=Connection.Role.READER,
        widget=forms.RadioSelect,
    )
    zone = forms.ChoiceField(required=False, label="Trust zone")

    def __init__(
        self, *args: Any, user: User, workspace_slug: str | None, client_name: str, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.owned = owned_workspaces(user)
        chosen = next((w for w in self.owned if w.slug == workspace_slug), None)
        self.chosen_workspace: Workspace | None = chosen or (self.owned[0] if self.owned else None)
        projects: list[Project] = []
        zones: list[TrustZone] = []
        if self.chosen_workspace is not None:
            projects = list(
                Project.objects.filter(workspace=self.chosen_workspace)
                .exclude(data_class=DataClass.RESTRICTED)
                .order_by("slug")
            )
            zones = list(TrustZone.objects.filter(workspace=self.chosen_workspace).order_by("name"))
            self.fields["workspace"].initial = self.chosen_workspace.slug
        self.fields["projects"].choices = [(p.slug, f"{p.name} ({p.data_class})") for p in projects]
        self.fields["zone"].choices = [("", "Choose a zone")] + [
            (z.name, f"{z.name} ({z.trust} trust)") for z in zones
        ]
        self.fields["zone"].initial = guess_zone(zones, client_name)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        resource = (cleaned.get("resource") or "").split()
        if len(resource) != 1 or not is_mcp_resource(resource[0]):
            raise forms.ValidationError(
                "This authorization request does not name the Unforgetter MCP resource."
            )
        if not cleaned.get("allow"):
            return cleaned
        if self.chosen_workspace is None or cleaned.get("workspace") != self.chosen_workspace.slug:
            raise forms.ValidationError("Choose a workspace you own.")
        if not cleaned.get("data_classes"):
            self.add_error("data_classes", "Choose at least one data class.")
        if not cleaned.get("all_projects") and not cleaned.get("projects"):
            self.add_error("projects", "Choose at least one project, or all of them.")
        if not cleaned.get("zone"):
            self.add_error("zone", "Choose a trust zone.")
        if cleaned.get("role") not in Connection.Role.values:
            self.add_error("role", "Choose a role.")
        return cleaned
