"""Console forms: they parse and validate input; the services decide and write."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django import forms

from memory.models import Kind, Proposal, State, Taint
from workspaces.durations import format_duration, parse_duration
from workspaces.models import Connection, DataClass, Project, TrustZone, Workspace

MAX_NOTE = 2000


def _choice(form: forms.Form, name: str) -> forms.ChoiceField:
    return cast(forms.ChoiceField, form.fields[name])


class DurationField(forms.CharField):
    """`90s`, `15m`, `12h`, `30d`; empty is None."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.TextInput(attrs={"maxlength": 16, "inputmode": "text"}))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> timedelta | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        try:
            return parse_duration(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def prepare_value(self, value: Any) -> Any:
        return format_duration(value) if isinstance(value, timedelta) else value


class ReviewFilterForm(forms.Form):
    project = forms.ChoiceField(required=False)
    zone = forms.ChoiceField(required=False)
    actor = forms.CharField(required=False, max_length=150)
    taint = forms.ChoiceField(required=False, choices=[("", "Any taint"), *Taint.choices])
    status = forms.ChoiceField(
        required=False,
        choices=[
            ("", "Any status"),
            (Proposal.Status.AWAITING_REVIEW, "Awaiting review"),
            (Proposal.Status.QUARANTINED, "Being validated"),
        ],
    )

    def __init__(self, *args: Any, projects: list[str], zones: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice(self, "project").choices = [("", "All projects"), *[(p, p) for p in projects]]
        _choice(self, "zone").choices = [("", "All zones"), *[(z, z) for z in zones]]


class RejectForm(forms.Form):
    note = forms.CharField(
        label="Reason for rejecting",
        max_length=MAX_NOTE,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Kept with the proposal so the same change is not proposed again.",
    )


class ApproveForm(forms.Form):
    note = forms.CharField(label="Note (optional)", max_length=MAX_NOTE, required=False)


class BulkReviewForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    seqs = forms.TypedMultipleChoiceField(coerce=int, label="Proposals")
    note = forms.CharField(max_length=MAX_NOTE, required=False, label="Reason (required to reject)")

    def __init__(self, *args: Any, seqs: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice(self, "seqs").choices = [(s, str(s)) for s in seqs]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "reject" and not (data.get("note") or "").strip():
            self.add_error("note", "Give a reason for rejecting these proposals.")
        return data


class IssueTokenForm(forms.Form):
    actor = forms.CharField(
        max_length=100, help_text="Who acts with this credential, e.g. claude-code@alice.", strip=True
    )
    label = forms.CharField(max_length=200, required=False, help_text="Where it is used, for your records.")
    zone = forms.ModelChoiceField(queryset=TrustZone.objects.none(), empty_label=None)
    role = forms.ChoiceField(
        choices=Connection.Role.choices,
        initial=Connection.Role.CONTRIBUTOR,
        widget=forms.RadioSelect,
        help_text="Readers list, read and search; contributors may also propose changes.",
    )
    all_projects = forms.BooleanField(
        required=False, initial=True, label="All projects (including future ones) in the allowed data classes"
    )
    projects = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    data_classes = forms.MultipleChoiceField(
        choices=[(c, DataClass(c).label) for c in DataClass.grantable()],
        initial=[DataClass.PUBLIC, DataClass.INTERNAL],
        widget=forms.CheckboxSelectMultiple,
        help_text="Restricted material is never granted to an agent.",
    )
    ttl = DurationField(
        required=False,
        label="Lifetime",
        help_text="e.g. 12h, 30d. Empty: the default, capped by the zone's maximum.",
    )

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast("forms.ModelChoiceField[TrustZone]", self.fields["zone"]).queryset = TrustZone.objects.filter(
            workspace=workspace
        ).order_by("name")
        _choice(self, "projects").choices = [
            (p.slug, f"{p.name} ({p.slug}, {p.data_class})")
            for p in Project.objects.filter(workspace=workspace).order_by("slug")
            if p.data_class != DataClass.RESTRICTED
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("all_projects") and not data.get("projects"):
            self.add_error("projects", "Choose at least one project, or all projects.")
        return data


class RevokeForm(forms.Form):
    token = forms.CharField(
        required=False,
        max_length=4096,
        strip=True,
        label="Optionally paste the token to test it against the verifier",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )


class ZoneForm(forms.Form):
    trust = forms.ChoiceField(choices=TrustZone.Trust.choices)
    max_token_ttl = DurationField(required=False, label="Maximum token lifetime", help_text="Empty: no cap.")
    review = forms.ChoiceField(choices=TrustZone.Review.choices, label="Review", required=False)


class NewZoneForm(ZoneForm):
    name = forms.SlugField(max_length=64, help_text="Lowercase, e.g. ci-bots.")
    field_order = ["name", "trust", "max_token_ttl"]


class MemoryFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    project = forms.ChoiceField(required=False)
    kind = forms.ChoiceField(required=False, choices=[("", "All kinds"), *Kind.choices])
    state = forms.ChoiceField(
        required=False,
        choices=[("current", "Current (active, open)"), *State.choices, ("all", "Every state")],
    )

    def __init__(self, *args: Any, projects: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice(self, "project").choices = [("", "All projects"), *[(p, p) for p in projects]]


class OwnerEditForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), max_length=8000)
    source = forms.CharField(
        required=False, max_length=500, help_text="Where this comes from, e.g. handbook/security.md."
    )


class OwnerCreateForm(forms.Form):
    project = forms.ChoiceField()
    kind = forms.ChoiceField(choices=[(k, Kind(k).label) for k in sorted(Kind.protected())])
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), max_length=8000)
    data_class = forms.ChoiceField(
        required=False,
        choices=[("", "The project's"), *DataClass.choices],
        label="Data class",
    )
    source = forms.CharField(required=False, max_length=500)

    def __init__(self, *args: Any, projects: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice(self, "project").choices = [(p, p) for p in projects]


class AuditFilterForm(forms.Form):
    action = forms.ChoiceField(required=False)
    actor = forms.CharField(required=False, max_length=150)

    def __init__(self, *args: Any, actions: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice(self, "action").choices = [("", "Every action"), *actions]
