"""The get_context bundle: bounded, with policies, provenance, identity, freshness and a stable id."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from memory import lexical_index
from memory.models import ContextRequest, Publication
from memory.services import publication_record
from tests.conftest import LiveServer, Tenant
from tests.readpath import (  # noqa: F401
    RecordingMCPClient,
    _fresh_bundle_cache,
    add_item,
    all_items,
    sdk_factory,
    served_record,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


def limits(**overrides: int) -> override_settings:
    return override_settings(UNFORGETTER={**settings.UNFORGETTER, **overrides})


def _billing_facts(tenant: Tenant, count: int) -> list[str]:
    return [
        add_item(tenant.projects["platform"], f"Billing fact {i}: invoices are retried on day {i}.").ref
        for i in range(count)
    ]


def test_the_bundle_is_bounded_by_item_count_and_points_to_what_did_not_fit(
    tenant: Tenant, sdk, mode: str
) -> None:
    refs = _billing_facts(tenant, 12)
    token, _ = tenant.issue()
    with limits(CONTEXT_MAX_ITEMS=5, CONTEXT_MAX_POINTERS=4):
        bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "billing invoices"})
    served = [item["ref"] for item in all_items(bundle)]
    assert len(served) == 5
    assert len(bundle["pointers"]) == 4
    for pointer in bundle["pointers"]:
        assert pointer["ref"] in refs
        assert pointer["ref"] not in served
        assert pointer["why"]


def test_the_bundle_is_bounded_by_characters(tenant: Tenant, sdk, mode: str) -> None:
    _billing_facts(tenant, 10)  # about 50 characters each
    token, _ = tenant.issue()
    with limits(CONTEXT_MAX_CHARS=160):
        bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "billing invoices"})
    texts = [item["text"] for item in all_items(bundle)]
    assert 1 <= len(texts) < 10
    assert sum(len(t) for t in texts) <= 160
    assert bundle["pointers"]


def test_policies_are_always_included_even_past_the_budget(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    policies = [
        add_item(platform, "Never deploy on Fridays.", kind="policy").ref,
        add_item(platform, "Ship zero-downtime deploys this quarter.", kind="goal").ref,
        add_item(platform, "Agents may read but not merge.", kind="permission").ref,
        add_item(platform, "We are the Acme platform team.", kind="identity").ref,
    ]
    _billing_facts(tenant, 3)
    token, _ = tenant.issue()
    with limits(CONTEXT_MAX_ITEMS=2):
        bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "something unrelated"})
    assert sorted(p["ref"] for p in bundle["policies"]) == sorted(policies)
    assert bundle["facts"] == []
    assert bundle["open_threads"] == []
    assert bundle["methods"] == []


def test_every_line_carries_provenance(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    add_item(platform, "Never deploy on Fridays.", kind="policy", source="handbook/policy.md", actor="owner")
    add_item(platform, "We deploy with the release train.", kind="decision", actor="claude@ana")
    add_item(platform, "Who owns the release train?", kind="thread")
    add_item(platform, "How to deploy: merge, wait for the train, watch the canary.", kind="method")
    token, _ = tenant.issue()
    bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "deploy with the train"})
    items = all_items(bundle)
    assert {i["kind"] for i in items} == {"policy", "decision", "thread", "method"}
    for item in items:
        provenance = item["provenance"]
        assert provenance["source"]
        assert provenance["actor"]
        assert provenance["date"] == timezone.now().date().isoformat()
    policy = bundle["policies"][0]
    assert policy["provenance"]["source"] == "handbook/policy.md"


def test_identity_and_freshness_describe_the_credential_and_the_publication(
    tenant: Tenant, sdk, mode: str
) -> None:
    token, _ = tenant.issue(actor="codex@tom", zone="codex", role="reader")
    publication = Publication.objects.filter(workspace=tenant.workspace).latest("version")
    bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "anything"})
    assert bundle["identity"] == {"actor": "codex@tom", "trust_zone": "codex", "role": "reader"}
    freshness = bundle["freshness"]
    assert freshness["compiled_at"] == publication.compiled_at.isoformat()
    assert freshness["replica_at"] >= freshness["compiled_at"]
    assert freshness["stale"] is False
    assert bundle["warnings"] == []


def test_a_publication_older_than_the_cadence_is_marked_stale(tenant: Tenant, sdk, mode: str) -> None:
    Publication.objects.filter(workspace=tenant.workspace).update(
        compiled_at=timezone.now() - timedelta(hours=1)
    )
    token, _ = tenant.issue()
    bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "anything"})
    assert bundle["freshness"]["stale"] is True
    assert [w["code"] for w in bundle["warnings"]] == ["stale_replica"]


def test_context_id_is_stable_within_a_publication_and_recorded_once(tenant: Tenant, sdk, mode: str) -> None:
    add_item(tenant.projects["platform"], "Deploys go through the release train.")
    token, connection = tenant.issue()
    client = sdk(token, mode)
    args = {"project_id": "platform", "task": "deploy the service"}

    first = client.ok("get_context", args)
    again = client.ok("get_context", args)
    other_task = client.ok("get_context", {**args, "task": "rotate the keys"})

    assert first["context_id"] == again["context_id"] != other_task["context_id"]
    record = served_record(first["context_id"])
    served_record(other_task["context_id"])
    assert (record.connection_id, record.project_id, record.task) == (
        connection.pk,
        tenant.projects["platform"].pk,
        "deploy the service",
    )
    assert set(record.refs) == {item["ref"] for item in all_items(first)}
    assert ContextRequest.objects.filter(connection=connection).count() == 2

    publication_record(workspace=tenant.workspace, changed=True)
    after = client.ok("get_context", args)
    assert after["context_id"] != first["context_id"]
    served_record(after["context_id"])
    assert ContextRequest.objects.filter(connection=connection).count() == 3


def test_another_credential_gets_its_own_context_id(tenant: Tenant, sdk, mode: str) -> None:
    first_token, _ = tenant.issue(actor="claude@ana")
    second_token, _ = tenant.issue(actor="codex@tom", zone="codex")
    args = {"project_id": "platform", "task": "deploy"}
    first = sdk(first_token, mode).ok("get_context", args)
    second = sdk(second_token, mode).ok("get_context", args)
    assert first["context_id"] != second["context_id"]
    assert second["identity"]["actor"] == "codex@tom"


def test_published_changes_are_served_from_the_next_get_context(tenant: Tenant, sdk, mode: str) -> None:
    token, _ = tenant.issue()
    client = sdk(token, mode)
    args = {"project_id": "platform", "task": "deploy the billing service"}
    assert client.ok("get_context", args)["facts"] == []
    item = add_item(tenant.projects["platform"], "Billing deploys need a database snapshot first.")
    publication_record(workspace=tenant.workspace, changed=True)
    assert [f["ref"] for f in client.ok("get_context", args)["facts"]] == [item.ref]


def test_threads_and_methods_go_to_their_sections(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    open_thread = add_item(platform, "Should deploys move to Mondays?", kind="thread")
    closed = add_item(platform, "Was the deploy bug fixed?", kind="thread", state="closed")
    method = add_item(platform, "How to deploy: merge and watch.", kind="method")
    unrelated = add_item(platform, "How to bake bread: flour and water.", kind="method")
    token, _ = tenant.issue()
    bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "deploy"})
    assert [t["ref"] for t in bundle["open_threads"]] == [open_thread.ref]
    assert [m["ref"] for m in bundle["methods"]] == [method.ref]
    served = {i["ref"] for i in all_items(bundle)}
    assert closed.ref not in served
    assert unrelated.ref not in served


def test_open_threads_and_methods_keep_room_when_facts_could_fill_the_bundle(
    tenant: Tenant, sdk, mode: str
) -> None:
    platform = tenant.projects["platform"]
    _billing_facts(tenant, 20)
    threads = [add_item(platform, f"Who owns billing queue {i}?", kind="thread").ref for i in range(6)]
    methods = [
        add_item(platform, f"How to replay billing invoices, way {i}.", kind="method").ref for i in range(4)
    ]
    token, _ = tenant.issue()
    with limits(CONTEXT_MAX_ITEMS=10):
        bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "billing invoices"})
    assert len(all_items(bundle)) == 10
    assert len(bundle["open_threads"]) == 4
    assert {t["ref"] for t in bundle["open_threads"]} <= set(threads)
    assert len(bundle["methods"]) == 3
    assert {m["ref"] for m in bundle["methods"]} <= set(methods)
    assert len(bundle["facts"]) == 3


def test_a_bundle_allowed_more_items_is_offered_more_of_the_task_s_matches(
    tenant: Tenant, sdk, mode: str
) -> None:
    # More matches than the default bundle is offered (50 ranked facts and the 20 newest), and room
    # for all of them: every item served is a match, and the bundle is full.
    refs = set(_billing_facts(tenant, 110))
    token, _ = tenant.issue()
    with limits(CONTEXT_MAX_ITEMS=90, CONTEXT_MAX_CHARS=100_000, CONTEXT_MAX_POINTERS=10):
        bundle = sdk(token, mode).ok("get_context", {"project_id": "platform", "task": "billing invoices"})
    served = [item["ref"] for item in all_items(bundle)]
    assert len(served) == 90
    assert set(served) <= refs
    assert len(bundle["pointers"]) == 10
    assert {p["ref"] for p in bundle["pointers"]} <= refs - set(served)


def test_a_task_past_the_ranking_budget_still_gets_its_standing_bundle(
    tenant: Tenant, sdk, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = tenant.projects["platform"]
    policy = add_item(platform, "Never deploy on Fridays.", kind="policy").ref
    newest = add_item(platform, "Billing retries webhooks three times.").ref
    token, _ = tenant.issue()
    client = sdk(token, mode)

    # The ranking stopped at the time budget, as on a loaded server with a task whose words
    # match most of a large project: the budget is spent before the first word is scored.
    monkeypatch.setattr(lexical_index, "time_budget_seconds", lambda: -1.0)
    bundle = client.ok("get_context", {"project_id": "platform", "task": "billing webhooks retries"})
    served = {item["ref"] for item in all_items(bundle)}
    assert {policy, newest} <= served
    refused = client.error("search_memory", {"project_id": "platform", "query": "billing webhooks"})
    assert refused["code"] == "invalid_request"
