"""propose_memory over real HTTP with the official SDK client: ops, refusals, trust, replays."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from memory.ledger import ledger_verify
from memory.models import Fact, Kind, Proposal, State, Taint
from memory.services import consolidation_run, fact_create, proposal_approve
from memory.worker import embedded_wait_idle
from tests.conftest import Tenant
from tests.mcp_client import MCPClient
from workspaces.models import DataClass

Client = Callable[..., MCPClient]


def rid() -> str:
    return f"req-{uuid.uuid4()}"


def args(
    text: str = "The billing service retries webhooks three times with exponential backoff.",
    *,
    op: str = "add_fact",
    project: str = "platform",
    request_id: str | None = None,
    trust: str = "trusted",
    evidence: list[dict[str, Any]] | None = None,
    **change: Any,
) -> dict[str, Any]:
    return {
        "project_id": project,
        "request_id": request_id or rid(),
        "change": {"op": op, "text": text, **change},
        "evidence": evidence or [{"ref": "services/billing/webhooks.py", "trust": trust}],
    }


def consolidate(tenant: Tenant) -> None:
    """Consolidate now (the live server's embedded worker may already have: exactly once either way)."""
    consolidation_run(workspace_id=tenant.workspace.pk, wait=True)


def proposal(proposal_id: str) -> Proposal:
    return Proposal.objects.get(ref=proposal_id)


def test_propose_memory_is_listed_as_an_idempotent_non_destructive_write(
    tenant: Tenant, mcp_client: Client, mode: str
) -> None:
    token, _ = tenant.issue()
    tool = next(t for t in mcp_client(token, mode).tools() if t.name == "propose_memory")
    assert tool.annotations.read_only_hint is False
    assert tool.annotations.destructive_hint is False
    assert tool.annotations.idempotent_hint is True
    for limit in ("8-128 characters", "30 days", "8000 characters", "1-20 evidence", "never fetched"):
        assert limit in tool.description
    assert set(tool.input_schema["properties"]) == {"project_id", "request_id", "change", "evidence"}


def test_added_fact_is_queued_published_and_served_with_its_actor(
    tenant: Tenant, mcp_client: Client, mode: str
) -> None:
    token, _ = tenant.issue(actor="claude-code@alice")
    client = mcp_client(token, mode)
    before = client.ok("get_context", {"project_id": "platform", "task": "billing webhooks retries"})
    assert before["facts"] == []

    result = client.ok("propose_memory", args(kind="decision"))
    assert result["status"] == "queued"
    assert result["taint"] == "clean"
    assert result["proposal_id"].startswith("prop_")
    consolidate(tenant)

    stored = proposal(result["proposal_id"])
    assert stored.status == Proposal.Status.PUBLISHED
    bundle = client.ok("get_context", {"project_id": "platform", "task": "billing webhooks retries"})
    assert bundle["context_id"] != before["context_id"], "a publication must invalidate the cached bundle"
    [fact] = bundle["facts"]
    assert fact["kind"] == "decision"
    assert fact["text"].startswith("The billing service retries webhooks")
    assert fact["provenance"]["actor"] == "claude-code@alice"
    assert fact["provenance"]["source"] == "services/billing/webhooks.py"
    assert fact["taint"] == "clean"
    hits = client.ok("search_memory", {"project_id": "platform", "query": "webhooks backoff"})["results"]
    assert [h["ref"] for h in hits] == [fact["ref"]]
    assert hits[0]["provenance"]["actor"] == "claude-code@alice"


def test_update_fact_supersedes_the_item_and_keeps_history(tenant: Tenant, mcp_client: Client) -> None:
    old = fact_create(
        project=tenant.projects["platform"],
        kind=Kind.CONVENTION,
        text="Deploys run on Jenkins.",
        actor="owner",
    )
    token, _ = tenant.issue()
    client = mcp_client(token)
    result = client.ok(
        "propose_memory", args("Deploys run on GitHub Actions since March.", op="update_fact", target=old.ref)
    )
    assert result["status"] == "queued"
    consolidate(tenant)

    old.refresh_from_db()
    assert old.state == State.SUPERSEDED
    new = Fact.objects.get(supersedes=old)
    assert (new.state, new.kind, new.text) == (
        State.ACTIVE,
        Kind.CONVENTION,
        "Deploys run on GitHub Actions since March.",
    )
    texts = [
        f["text"] for f in client.ok("get_context", {"project_id": "platform", "task": "deploys"})["facts"]
    ]
    assert texts == ["Deploys run on GitHub Actions since March."]


def test_threads_are_opened_and_closed_through_proposals(tenant: Tenant, mcp_client: Client) -> None:
    token, _ = tenant.issue()
    client = mcp_client(token)
    client.ok("propose_memory", args("Should the nightly export move to Parquet?", op="open_thread"))
    consolidate(tenant)
    [thread] = client.ok("get_context", {"project_id": "platform", "task": "export"})["open_threads"]
    assert thread["state"] == "open"

    closed = client.ok(
        "propose_memory", args("Decided: yes, from the May release.", op="close_thread", target=thread["ref"])
    )
    assert closed["status"] == "queued"
    consolidate(tenant)
    assert client.ok("get_context", {"project_id": "platform", "task": "export"})["open_threads"] == []
    assert Fact.objects.get(ref=thread["ref"]).state == State.CLOSED


def test_reject_retracts_a_published_item_and_keeps_it(tenant: Tenant, mcp_client: Client) -> None:
    wrong = fact_create(
        project=tenant.projects["platform"], kind=Kind.FACT, text="The API gateway is nginx.", actor="owner"
    )
    token, _ = tenant.issue()
    client = mcp_client(token)
    result = client.ok(
        "propose_memory", args("It is Envoy; see the helm chart.", op="reject", target=wrong.ref)
    )
    consolidate(tenant)
    assert proposal(result["proposal_id"]).status == Proposal.Status.PUBLISHED
    wrong.refresh_from_db()
    assert wrong.state == State.RETRACTED
    assert client.ok("search_memory", {"project_id": "platform", "query": "gateway nginx"})["results"] == []


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"op": "add_fact", "text": ""}, "change.text"),
        ({"op": "add_fact", "text": "x", "target": "fact_abcdefghjk2345"}, "omit target"),
        ({"op": "update_fact", "text": "x"}, "needs target"),
        ({"op": "close_thread", "text": "x"}, "needs target"),
        ({"op": "merge", "text": "x"}, "change.op"),
        ({"op": "add_fact", "text": "x", "kind": "method"}, "change.kind"),
        ({"op": "add_fact", "text": "x", "color": "red"}, "change.color is not a known argument"),
    ],
)
def test_malformed_changes_are_invalid_requests(
    tenant: Tenant, mcp_client: Client, change: dict[str, Any], fragment: str
) -> None:
    token, _ = tenant.issue()
    body = args()
    body["change"] = change
    error = mcp_client(token).error("propose_memory", body)
    assert error["code"] == "invalid_request"
    assert fragment in error["message"]
    assert not Proposal.objects.exists()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda a: a.update(request_id="short"),
        lambda a: a.update(request_id="has space in it"),
        lambda a: a.update(request_id="x" * 129),
        lambda a: a.update(evidence=[]),
        lambda a: a.update(evidence=[{"trust": "trusted"}]),
        lambda a: a.update(evidence=[{"ref": "x", "trust": "certain"}]),
        lambda a: a.update(evidence=[{"ref": "x", "trust": "trusted"}] * 21),
        lambda a: a["change"].update(text="x" * 8001),
        lambda a: a.update(workspace="other"),
    ],
    ids=[
        "short-id",
        "id-alphabet",
        "long-id",
        "no-evidence",
        "empty-evidence",
        "bad-trust",
        "21-items",
        "long-text",
        "extra-key",
    ],
)
def test_arguments_outside_the_published_limits_are_invalid_requests(
    tenant: Tenant, mcp_client: Client, mutate: Callable[[dict[str, Any]], None]
) -> None:
    token, _ = tenant.issue()
    body = args()
    mutate(body)
    assert mcp_client(token).error("propose_memory", body)["code"] == "invalid_request"
    assert not Proposal.objects.exists()


def test_scope_refusals_name_the_specific_code(
    tenant: Tenant, other_tenant: Tenant, mcp_client: Client
) -> None:
    token, _ = tenant.issue(data_classes=[DataClass.PUBLIC, DataClass.INTERNAL])
    client = mcp_client(token)
    assert client.error("propose_memory", args(project="incidents"))["code"] == "forbidden_scope"
    assert client.error("propose_memory", args(project="payroll"))["code"] == "forbidden_scope"
    assert client.error("propose_memory", args(project="no-such-project"))["code"] == "unknown_project"
    # Another tenant's project with the same slug is simply not this workspace's.
    other_only = other_tenant.projects["platform"]
    other_only.slug = "globex-only"
    other_only.save()
    assert client.error("propose_memory", args(project="globex-only"))["code"] == "unknown_project"
    assert not Proposal.objects.exists()


def test_reader_credential_cannot_propose(tenant: Tenant, mcp_client: Client) -> None:
    token, _ = tenant.issue(role="reader")
    error = mcp_client(token).error("propose_memory", args())
    assert error["code"] == "forbidden_scope"
    assert "read-only" in error["message"]
    assert "contributor" in error["action"]
    assert not Proposal.objects.exists()


def test_items_outside_the_credentials_classes_are_refused_as_targets(
    tenant: Tenant, mcp_client: Client
) -> None:
    secret = fact_create(
        project=tenant.projects["platform"],
        kind=Kind.FACT,
        text="Vendor contract renews in June.",
        actor="owner",
        data_class=DataClass.CONFIDENTIAL,
    )
    elsewhere = fact_create(
        project=tenant.projects["handbook"],
        kind=Kind.FACT,
        text="We write in British English.",
        actor="owner",
    )
    token, _ = tenant.issue()
    client = mcp_client(token)
    assert (
        client.error("propose_memory", args("x", op="reject", target=secret.ref))["code"] == "forbidden_scope"
    )
    error = client.error("propose_memory", args("x", op="reject", target=elsewhere.ref))
    assert error["code"] == "invalid_request"
    assert not Proposal.objects.exists()


@pytest.mark.parametrize(
    "change",
    [
        {"op": "update_fact", "text": "x", "target": "<policy>"},
        {"op": "update_fact", "text": "x", "target": "Policy_Deploys"},
        {"op": "update_fact", "text": "x", "target": "\uff30\uff2f\uff2c\uff29\uff23\uff39_x"},
        {"op": "update_fact", "text": "x", "target": "pol\u200bicy_x"},
        {"op": "update_fact", "text": "x", "target": "p\u043elicy_x"},  # Cyrillic o
        {"op": "reject", "text": "x", "target": "goals"},
        {"op": "update_fact", "text": "x", "supersedes": "identity_k2m9q4"},
        {"op": "reject", "text": "x", "target": "unforgetter:permission_abc"},
        {"op": "add_fact", "text": "Everyone may deploy on Fridays.", "kind": "policy"},
        {"op": "add_fact", "text": "x", "kind": "Permissions"},
    ],
)
def test_protected_targets_are_refused_however_spelled(
    tenant: Tenant, mcp_client: Client, change: dict[str, Any]
) -> None:
    token, _ = tenant.issue()
    body = args()
    if change["target" if "target" in change else "text"] == "<policy>":
        policy = fact_create(
            project=tenant.projects["platform"], kind=Kind.POLICY, text="Deploys need review.", actor="owner"
        )
        change = {**change, "target": policy.ref}
    body["change"] = change
    error = mcp_client(token).error("propose_memory", body)
    assert error["code"] == "protected_target"
    assert "owner" in error["action"]
    assert not Proposal.objects.exists()


def test_protected_item_with_an_unremarkable_ref_is_still_protected(
    tenant: Tenant, mcp_client: Client
) -> None:
    rule = fact_create(
        project=tenant.projects["platform"],
        kind=Kind.IDENTITY,
        text="The deploy bot is deploybot@acme.",
        actor="owner",
        ref="rule_k2m9q4r8s3",
    )
    token, _ = tenant.issue()
    for op in ("update_fact", "reject", "close_thread"):
        error = mcp_client(token).error("propose_memory", args("x", op=op, target=rule.ref))
        assert error["code"] == "protected_target", op


def test_replayed_request_id_returns_the_original_and_stores_nothing(
    tenant: Tenant, mcp_client: Client, mode: str
) -> None:
    token, _ = tenant.issue()
    client = mcp_client(token, mode)
    body = args()
    first = client.ok("propose_memory", body)
    again = client.ok("propose_memory", body)
    assert again["proposal_id"] == first["proposal_id"]
    assert (again["status"], again["taint"]) == (first["status"], first["taint"])
    assert again["duplicate_request"] is True
    assert again["warnings"][0]["code"] == "duplicate_request"
    assert "NOT stored" not in again["warnings"][0]["message"]

    changed = {**body, "change": {"op": "add_fact", "text": "Something else entirely."}}
    different = client.ok("propose_memory", changed)
    assert different["proposal_id"] == first["proposal_id"]
    assert "NOT stored" in different["warnings"][0]["message"]
    assert Proposal.objects.count() == 1
    assert Proposal.objects.get().text == body["change"]["text"]


def test_request_ids_are_scoped_to_the_actor(tenant: Tenant, mcp_client: Client) -> None:
    alice, _ = tenant.issue(actor="claude@alice")
    bob, _ = tenant.issue(actor="codex@bob", zone="codex")
    alice_again, _ = tenant.issue(actor="claude@alice")
    body = args()
    a = mcp_client(alice).ok("propose_memory", body)
    b = mcp_client(bob).ok("propose_memory", body)
    assert a["proposal_id"] != b["proposal_id"]
    # The same actor with a second credential: the same namespace, the original result.
    assert mcp_client(alice_again).ok("propose_memory", body)["proposal_id"] == a["proposal_id"]
    assert Proposal.objects.count() == 2


def test_concurrent_replays_create_exactly_one_proposal(tenant: Tenant, mcp_client: Client) -> None:
    token, _ = tenant.issue()
    body = args()
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            results.append(mcp_client(token).ok("propose_memory", body))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len({r["proposal_id"] for r in results}) == 1
    assert sum(1 for r in results if not r.get("duplicate_request")) == 1
    assert Proposal.objects.count() == 1


def test_concurrent_proposals_are_each_stored_once_in_one_unbroken_chain(
    tenant: Tenant, mcp_client: Client
) -> None:
    # Concurrent submissions of a process are committed together (memory.services.group_commit);
    # a replay racing its original in the same burst must still come out as exactly one proposal.
    token, _ = tenant.issue()
    bodies = [args(f"Service {i} pages the platform on-call.") for i in range(10)]
    bodies += [bodies[0], bodies[3]]
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(bodies))

    def call(body: dict[str, Any]) -> None:
        try:
            start.wait()
            results.append(mcp_client(token).ok("propose_memory", body))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == 12
    assert sum(1 for r in results if r.get("duplicate_request")) == 2
    stored = list(Proposal.objects.order_by("seq").values_list("seq", "request_id"))
    assert [seq for seq, _ in stored] == list(range(1, 11))
    assert {request_id for _, request_id in stored} == {b["request_id"] for b in bodies}
    assert ledger_verify(workspace=tenant.workspace).ok


def test_untrusted_evidence_is_quarantined(tenant: Tenant, mcp_client: Client) -> None:
    token, _ = tenant.issue()
    client = mcp_client(token)
    evidence = [
        {"ref": "services/billing/webhooks.py", "trust": "trusted"},
        {"text": "A Stack Overflow answer said so.", "trust": "untrusted"},
    ]
    result = client.ok("propose_memory", args(evidence=evidence))
    assert (result["status"], result["taint"]) == ("quarantined", "untrusted")
    consolidate(tenant)
    assert proposal(result["proposal_id"]).status == Proposal.Status.AWAITING_REVIEW
    assert client.ok("search_memory", {"project_id": "platform", "query": "webhooks"})["results"] == []


def test_low_trust_zone_cannot_claim_trust(tenant: Tenant, mcp_client: Client) -> None:
    token, _ = tenant.issue(actor="grok-bot", zone="grok-bot")
    result = mcp_client(token).ok("propose_memory", args(trust="trusted"))
    assert (result["status"], result["taint"]) == ("quarantined", "untrusted")
    stored = proposal(result["proposal_id"])
    assert stored.evidence[0]["claimed"] == "trusted"
    assert stored.evidence[0]["trust"] == "untrusted"


def test_taint_is_inherited_through_citations_and_survives_approval(
    tenant: Tenant, mcp_client: Client
) -> None:
    bot, _ = tenant.issue(actor="grok-bot", zone="grok-bot")
    claude, _ = tenant.issue(actor="claude@alice")
    first = mcp_client(bot).ok("propose_memory", args("Staging resets every Sunday at 02:00 UTC."))
    consolidate(tenant)
    proposal_approve(proposal=proposal(first["proposal_id"]), reviewer=tenant.owner, note="checked the cron")
    tainted = Fact.objects.get(proposal__ref=first["proposal_id"])
    assert tainted.taint == Taint.UNTRUSTED, "approval must not clear taint"
    served = mcp_client(claude).ok("get_context", {"project_id": "platform", "task": "staging reset"})[
        "facts"
    ]
    assert served[0]["taint"] == "untrusted"

    # Citing it, by ref or as unforgetter:REF or inside a quotation, passes the taint on.
    for evidence in (
        [{"ref": tainted.ref, "trust": "trusted"}],
        [{"ref": f"unforgetter:{tainted.ref}", "trust": "trusted"}],
        [{"text": f"see {tainted.ref} in memory", "trust": "trusted"}],
    ):
        cited = mcp_client(claude).ok("propose_memory", args("Staging data is synthetic.", evidence=evidence))
        assert (cited["status"], cited["taint"]) == ("quarantined", "untrusted")
    # An update of a tainted item is tainted too, and so is what gets published from it.
    update = mcp_client(claude).ok(
        "propose_memory",
        args("Staging resets every Sunday at 03:00 UTC.", op="update_fact", target=tainted.ref),
    )
    assert update["taint"] == "untrusted"
    consolidate(tenant)
    proposal_approve(proposal=proposal(update["proposal_id"]), reviewer=tenant.owner)
    assert Fact.objects.get(proposal__ref=update["proposal_id"]).taint == Taint.UNTRUSTED


def test_clean_proposal_citing_clean_items_stays_queued(tenant: Tenant, mcp_client: Client) -> None:
    clean = fact_create(
        project=tenant.projects["platform"], kind=Kind.FACT, text="Postgres 16.", actor="owner"
    )
    token, _ = tenant.issue()
    result = mcp_client(token).ok(
        "propose_memory",
        args("Postgres 16 runs with pgbouncer.", evidence=[{"ref": clean.ref, "trust": "trusted"}]),
    )
    assert (result["status"], result["taint"]) == ("queued", "clean")
    assert proposal(result["proposal_id"]).evidence[0]["cites"] == clean.ref


@pytest.fixture
def embedded_worker(live: object) -> Iterator[None]:
    """The serving process's own consolidator, on (the product default; off elsewhere in tests)."""
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EMBEDDED_WORKER": True}):
        yield
    embedded_wait_idle()  # before the test database is flushed


def test_embedded_worker_publishes_without_anyone_calling_the_consolidator(
    tenant: Tenant, mcp_client: Client, embedded_worker: None
) -> None:
    """The product's default: the serving process consolidates by itself (make run)."""
    token, _ = tenant.issue()
    client = mcp_client(token)
    result = client.ok("propose_memory", args("The on-call rotation changes on Mondays at 09:00."))
    deadline = time.monotonic() + 20
    while proposal(result["proposal_id"]).status != Proposal.Status.PUBLISHED:
        assert time.monotonic() < deadline, "the embedded consolidator did not publish the proposal"
        time.sleep(0.05)
    hits = client.ok("search_memory", {"project_id": "platform", "query": "on-call rotation"})["results"]
    assert len(hits) == 1
