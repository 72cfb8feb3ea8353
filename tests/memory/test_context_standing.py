"""The task-independent part of a bundle is compiled once per content version, and only then.

Through the MCP endpoint: a second task reuses what the first compiled, a publication that
changed memory is served on the very next call, and two credentials that see different data
classes never share what was compiled for the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memory.imports import memory_import
from memory.services import fact_owner_create
from tests.conftest import LiveServer, Tenant
from tests.readpath import RecordingMCPClient, _fresh_bundle_cache, add_item, sdk_factory  # noqa: F401
from workspaces.models import DataClass

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


@pytest.fixture
def platform(tenant: Tenant) -> Tenant:
    project = tenant.projects["platform"]
    add_item(project, "Never deploy on Fridays.", kind="policy")
    add_item(
        project, "Confidential: the Acme contract renews in March.", kind="policy", data_class="confidential"
    )
    add_item(project, "Who owns the billing pipeline?", kind="thread")
    for i in range(5):
        add_item(project, f"Release note {i}: the train leaves at {i + 8} o'clock.")
    return tenant


def _policies(bundle: dict) -> list[str]:
    return [item["text"] for item in bundle["policies"]]


def test_a_new_task_reuses_the_standing_part_and_a_publication_replaces_it(
    platform: Tenant, sdk, mode: str
) -> None:
    token, _ = platform.issue()
    client = sdk(token, mode)
    first = client.ok("get_context", {"project_id": "platform", "task": "plan the release"})
    assert _policies(first) == ["Never deploy on Fridays."]
    assert [t["text"] for t in first["open_threads"]] == ["Who owns the billing pipeline?"]

    fact_owner_create(
        project=platform.projects["platform"], kind="policy", text="Tag every release.", editor=platform.owner
    )
    # A task never asked before, right after the publication: the new policy is there.
    second = client.ok("get_context", {"project_id": "platform", "task": "write the changelog"})
    assert sorted(_policies(second)) == ["Never deploy on Fridays.", "Tag every release."]
    assert [t["text"] for t in second["open_threads"]] == ["Who owns the billing pipeline?"]


def test_credentials_with_other_data_classes_never_share_a_standing_part(
    platform: Tenant, sdk, mode: str
) -> None:
    internal, _ = platform.issue()
    confidential, _ = platform.issue(data_classes=[DataClass.INTERNAL, DataClass.CONFIDENTIAL])
    task = {"project_id": "platform", "task": "plan the release"}
    # The wider credential compiles first; the narrower one, at the same content version, must
    # not be served its policies.
    wide = sdk(confidential, mode).ok("get_context", task)
    assert "Confidential: the Acme contract renews in March." in _policies(wide)
    narrow = sdk(internal, mode).ok("get_context", {**task, "task": "plan the next release"})
    assert _policies(narrow) == ["Never deploy on Fridays."]
    assert "Acme" not in json.dumps(narrow)
    # And the other way round, on a new task: the wide one still sees its class.
    again = sdk(confidential, mode).ok("get_context", {**task, "task": "review the release"})
    assert "Confidential: the Acme contract renews in March." in _policies(again)


def test_an_import_is_served_on_the_next_call_even_for_a_task_asked_before(
    platform: Tenant, sdk, mode: str, tmp_path: Path
) -> None:
    token, _ = platform.issue()
    client = sdk(token, mode)
    task = {"project_id": "platform", "task": "plan the release"}
    assert _policies(client.ok("get_context", task)) == ["Never deploy on Fridays."]
    source = tmp_path / "notes.jsonl"
    source.write_text(json.dumps({"kind": "policy", "text": "Releases need two approvals."}) + "\n")
    memory_import(project=platform.projects["platform"], path=source, fmt="jsonl")
    again = client.ok("get_context", task)
    assert sorted(_policies(again)) == ["Never deploy on Fridays.", "Releases need two approvals."]
