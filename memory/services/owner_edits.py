"""Owner edits of protected items (goals, policies, permissions, identities), from the console only.

Agents can never change these kinds; an owner's edit never overwrites either: it adds a new version
that supersedes the old one, records who made it, audits it and publishes, so every compiled
bundle is refreshed on the next read.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from memory.models import Fact, Kind, State
from memory.services.facts import fact_build, project_touch
from memory.services.publishing import publication_record
from workspaces.exceptions import InvalidRequest
from workspaces.models import AuditEvent, Project
from workspaces.services import audit_record


def _check_protected(kind: str) -> None:
    if kind not in Kind.protected():
        raise InvalidRequest("Only goals, policies, permissions and identities are edited here.")


@transaction.atomic
def fact_owner_edit(*, fact: Fact, text: str, editor: User, source: str = "") -> Fact:
    """Replace a current protected item's text with a new version that supersedes it.

    The old row is locked and must still be active: two owners editing at once cannot both
    supersede the same version (the second gets a clear error and edits the newer one).
    """
    _check_protected(fact.kind)
    old = Fact.objects.select_for_update().select_related("project").get(pk=fact.pk)
    if old.state != State.ACTIVE:
        raise InvalidRequest("This version is no longer current; edit the newest version instead.")
    text = text.strip()
    if text == old.text and not source:
        raise InvalidRequest("The text is unchanged.")
    new = fact_build(
        project=old.project,
        kind=old.kind,
        text=text,
        actor=editor.username,
        data_class=old.data_class,
        source=source or old.source,
        source_date=None,
    )
    new.supersedes = old
    new.edited_by = editor
    # An owner's own words are clean, but an edit of a tainted item keeps its taint: the owner may
    # have kept text that came from untrusted material.
    new.taint = old.taint
    new.save()
    old.state = State.SUPERSEDED
    old.save(update_fields=["state"])
    _published(old.project, editor, new, {"kind": new.kind, "supersedes": old.ref, "edit": "update"})
    return new


@transaction.atomic
def fact_owner_create(
    *, project: Project, kind: str, text: str, editor: User, data_class: str | None = None, source: str = ""
) -> Fact:
    """Add a new protected item to a project."""
    _check_protected(kind)
    fact = fact_build(
        project=project, kind=kind, text=text, actor=editor.username, data_class=data_class, source=source
    )
    fact.edited_by = editor
    fact.save()
    _published(project, editor, fact, {"kind": kind, "edit": "create"})
    return fact


def _published(project: Project, editor: User, fact: Fact, detail: dict[str, Any]) -> None:
    project_touch(project_ids=[project.pk])
    audit_record(
        workspace=project.workspace,
        action=AuditEvent.Action.OWNER_EDIT,
        actor=editor.username,
        user=editor,
        target=fact.ref,
        detail={"project": project.slug, **detail},
    )
    publication_record(workspace=project.workspace, published_count=0, changed=True)
