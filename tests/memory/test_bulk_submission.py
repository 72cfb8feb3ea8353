"""`proposals_submit` is `proposal_submit` for many changes: the same proposals, one locked insert."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext

from memory.ledger import ledger_verify
from memory.models import Fact, Kind, Proposal, Taint
from memory.services import (
    ProposedChange,
    consolidation_run,
    fact_create,
    proposal_approve,
    proposal_submit,
    proposals_submit,
)
from memory.services import proposals as proposals_module
from tests.conftest import Tenant
from workspaces.exceptions import ForbiddenScope, InvalidRequest
from workspaces.models import Connection
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db

TRUSTED = [{"ref": "ci/config.yml", "trust": "trusted"}]


def change(text: str = "Builds cache to S3.", **fields: Any) -> ProposedChange:
    body = {"request_id": f"bulk-{uuid.uuid4()}", "op": "add_fact", "evidence": TRUSTED, **fields}
    return cast(ProposedChange, {**body, "text": text})


def submit_one(connection: Connection, item: ProposedChange) -> Proposal:
    return proposal_submit(scope=agent_scope(connection), project_id="platform", **item).proposal


def submit_many(connection: Connection, items: list[ProposedChange]) -> list[Proposal]:
    submitted = proposals_submit(scope=agent_scope(connection), project_id="platform", changes=items)
    return [s.proposal for s in submitted]


def tainted_item(tenant: Tenant) -> Fact:
    """An item published from untrusted evidence, approved by the owner: it carries the taint."""
    _, bot = tenant.issue(actor="bot@tests")
    held = submit_one(
        bot, change("Webhooks retry five times.", evidence=[{"text": "a blog", "trust": "untrusted"}])
    )
    consolidation_run(workspace_id=tenant.workspace.pk)
    proposal_approve(proposal=held, reviewer=tenant.owner)
    return Fact.objects.get(proposal=held)


def variety(tenant: Tenant) -> list[ProposedChange]:
    """Changes that exercise every part of preparing one: kinds, targets, taint, citations."""
    platform = tenant.projects["platform"]
    decision = fact_create(project=platform, kind=Kind.DECISION, text="Use Redis 6.", actor="o")
    thread = fact_create(project=platform, kind=Kind.THREAD, text="Which queue?", actor="o")
    tainted = tainted_item(tenant)
    return [
        change(),
        change("Quarantine me.", evidence=[{"text": "hearsay", "trust": "untrusted"}]),
        change("Use Redis 7.", op="update_fact", target=decision.ref),
        change("Close it: Redis streams.", op="close_thread", target=thread.ref),
        change("A convention.", kind="convention"),
        change("Open question.", op="open_thread"),
        change(
            f"As {tainted.ref} says, retries are capped.", evidence=[{"ref": tainted.ref, "trust": "trusted"}]
        ),
        change("Cited by name.", evidence=[{"ref": f"unforgetter:{tainted.ref}", "trust": "trusted"}]),
    ]


STORED_AS = ("op", "kind", "target", "text", "supersedes", "evidence", "content_digest", "status", "taint")


@pytest.mark.parametrize("zone", ["claude", "grok-bot"])
def test_bulk_stores_exactly_what_one_at_a_time_stores(tenant: Tenant, zone: str) -> None:
    items = variety(tenant)
    _, single = tenant.issue(actor="one@tests", zone=zone)
    _, bulk = tenant.issue(actor="many@tests", zone=zone)
    one_by_one = [submit_one(single, item) for item in items]
    together = submit_many(
        bulk, [cast(ProposedChange, {**item, "request_id": f"again-{uuid.uuid4()}"}) for item in items]
    )
    for alone, batched in zip(one_by_one, together, strict=True):
        stored = Proposal.objects.get(pk=batched.pk)
        for name in STORED_AS:
            assert getattr(stored, name) == getattr(alone, name), (alone.text, name)
        assert (stored.actor, stored.connection_id, stored.zone) == ("many@tests", bulk.pk, zone)
    assert [p.taint for p in together][6:] == [Taint.UNTRUSTED, Taint.UNTRUSTED]
    assert ledger_verify(workspace=tenant.workspace).ok


def test_bulk_seq_is_the_order_of_the_changes_and_the_chain_holds(tenant: Tenant) -> None:
    _, connection = tenant.issue()
    first = submit_one(connection, change("One."))
    batch = submit_many(connection, [change(f"Batch {n}.") for n in range(5)])
    last = submit_one(connection, change("Last."))
    assert [first.seq, *(p.seq for p in batch), last.seq] == list(range(1, 8))
    assert [p.text for p in Proposal.objects.order_by("seq")] == [
        "One.",
        *(f"Batch {n}." for n in range(5)),
        "Last.",
    ]
    assert ledger_verify(workspace=tenant.workspace).ok


def test_a_refused_change_refuses_the_whole_submission(tenant: Tenant) -> None:
    _, connection = tenant.issue(data_classes=["public", "internal"])
    secret = fact_create(
        project=tenant.projects["platform"],
        kind=Kind.FACT,
        text="Hidden.",
        actor="o",
        data_class="confidential",
    )
    with pytest.raises(ForbiddenScope):
        submit_many(connection, [change("Fine."), change("Not fine.", op="update_fact", target=secret.ref)])
    with pytest.raises(InvalidRequest, match="evidence"):
        submit_many(connection, [change("Fine."), change("No evidence.", evidence=[])])
    assert not Proposal.objects.exists()


def test_a_reader_may_not_submit_in_bulk(tenant: Tenant) -> None:
    _, reader = tenant.issue(role=Connection.Role.READER)
    with pytest.raises(ForbiddenScope):
        submit_many(reader, [change()])
    assert not Proposal.objects.exists()


def test_a_request_id_already_used_answers_the_original(tenant: Tenant) -> None:
    _, connection = tenant.issue()
    original = submit_one(connection, change("Original.", request_id="req-00000001"))
    scope = agent_scope(connection)
    replay, new = proposals_submit(
        scope=scope,
        project_id="platform",
        changes=[change("Original.", request_id="req-00000001"), change("New.", request_id="req-00000002")],
    )
    (different,) = proposals_submit(
        scope=scope, project_id="platform", changes=[change("Changed my mind.", request_id="req-00000001")]
    )
    assert (replay.duplicate, replay.same_content, replay.proposal.pk) == (True, True, original.pk)
    assert not new.duplicate
    assert (different.duplicate, different.same_content, different.proposal.pk) == (True, False, original.pk)
    assert Proposal.objects.filter(request_id="req-00000001").count() == 1
    assert Proposal.objects.count() == 2


def test_a_request_id_twice_in_one_submission_is_refused(tenant: Tenant) -> None:
    _, connection = tenant.issue()
    with pytest.raises(InvalidRequest, match="more than once"):
        submit_many(
            connection, [change("A.", request_id="req-twice-1"), change("B.", request_id="req-twice-1")]
        )
    assert not Proposal.objects.exists()


def test_a_replay_committed_first_by_another_writer_is_answered_as_a_replay(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unique constraint has the last word: the batch is stored again without the taken id."""
    _, connection = tenant.issue()
    store = proposals_module._store
    raced: list[Proposal] = []

    def racing_store(workspace_id: int, proposals: Any) -> None:
        # Another writer stores the same request id between this call's checks and its insert.
        monkeypatch.setattr(proposals_module, "_store", store)
        raced.append(submit_one(connection, change("Raced.", request_id="req-raced-01")))
        store(workspace_id, proposals)

    monkeypatch.setattr(proposals_module, "_store", racing_store)
    before, taken, after = proposals_submit(
        scope=agent_scope(connection),
        project_id="platform",
        changes=[change("Before."), change("Raced.", request_id="req-raced-01"), change("After.")],
    )
    assert (taken.duplicate, taken.same_content, taken.proposal.pk) == (True, True, raced[0].pk)
    assert not before.duplicate
    assert not after.duplicate
    assert [p.text for p in Proposal.objects.order_by("seq")] == ["Raced.", "Before.", "After."]
    assert ledger_verify(workspace=tenant.workspace).ok


def _reads(tenant: Tenant, connection: Connection, count: int) -> int:
    """Statements other than inserts that submitting `count` updates of one item takes."""
    base = fact_create(project=tenant.projects["platform"], kind=Kind.DECISION, text=f"D{count}.", actor="o")
    items = [change(f"Change {n} of {count}.", op="update_fact", target=base.ref) for n in range(count)]
    with CaptureQueriesContext(db_connection) as queries:
        submit_many(connection, items)
    return sum(1 for q in queries.captured_queries if not q["sql"].lstrip().upper().startswith("INSERT"))


def test_bulk_reads_do_not_grow_with_the_number_of_changes(tenant: Tenant) -> None:
    _, connection = tenant.issue()
    assert _reads(tenant, connection, 3) == _reads(tenant, connection, 300)
