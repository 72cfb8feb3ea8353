"""search_memory pages and cursors: scoped, encrypted, expiring, bound to one search."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.core import signing
from django.test import override_settings

from memory.cursors import cursor_make
from tests.conftest import LiveServer, Tenant
from tests.readpath import RecordingMCPClient, _fresh_bundle_cache, add_item, sdk_factory  # noqa: F401
from workspaces.keys import new_key
from workspaces.selectors import agent_scope

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live: LiveServer) -> Callable[..., RecordingMCPClient]:
    return sdk_factory(live)


def _items(tenant: Tenant, project: str, count: int, word: str = "webhook") -> set[str]:
    return {
        add_item(tenant.projects[project], f"Note {i}: the {word} handler of service {i} retries.").ref
        for i in range(count)
    }


def _pages(client, project: str, query: str) -> list[dict]:
    pages = [client.ok("search_memory", {"project_id": project, "query": query})]
    while "cursor" in pages[-1] and len(pages) < 10:
        pages.append(
            client.ok("search_memory", {"project_id": project, "query": query, "cursor": pages[-1]["cursor"]})
        )
    return pages


def test_pages_walk_every_match_once_with_a_cursor(tenant: Tenant, sdk, mode: str) -> None:
    refs = _items(tenant, "platform", 23)
    token, _ = tenant.issue()
    pages = _pages(sdk(token, mode), "platform", "webhook handler")
    assert [len(p["results"]) for p in pages] == [10, 10, 3]
    seen = [r["ref"] for page in pages for r in page["results"]]
    assert len(seen) == len(set(seen)) == 23
    assert set(seen) == refs
    assert "cursor" not in pages[-1]


def test_a_cursor_is_refused_in_another_project(tenant: Tenant, sdk, mode: str) -> None:
    _items(tenant, "platform", 12)
    _items(tenant, "handbook", 12)
    token, _ = tenant.issue()
    client = sdk(token, mode)
    cursor = client.ok("search_memory", {"project_id": "platform", "query": "webhook"})["cursor"]
    error = client.error("search_memory", {"project_id": "handbook", "query": "webhook", "cursor": cursor})
    assert error["code"] == "invalid_cursor"


def test_a_cursor_is_refused_for_another_query(tenant: Tenant, sdk, mode: str) -> None:
    _items(tenant, "platform", 12)
    token, _ = tenant.issue()
    client = sdk(token, mode)
    cursor = client.ok("search_memory", {"project_id": "platform", "query": "webhook"})["cursor"]
    for query in ["webhooks", "webhook handler", "Webhook"]:
        error = client.error("search_memory", {"project_id": "platform", "query": query, "cursor": cursor})
        assert error["code"] == "invalid_cursor"


def test_a_cursor_is_refused_to_another_credential(
    tenant: Tenant, other_tenant: Tenant, sdk, mode: str
) -> None:
    _items(tenant, "platform", 12)
    _items(other_tenant, "platform", 12)
    token, _ = tenant.issue()
    colleague, _ = tenant.issue(actor="codex@tom", zone="codex")
    stranger, _ = other_tenant.issue()
    cursor = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": "webhook"})["cursor"]
    args = {"project_id": "platform", "query": "webhook", "cursor": cursor}
    assert sdk(colleague, mode).error("search_memory", args)["code"] == "invalid_cursor"
    assert sdk(stranger, mode).error("search_memory", args)["code"] == "invalid_cursor"


def test_an_expired_cursor_is_refused(tenant: Tenant, sdk, mode: str) -> None:
    _items(tenant, "platform", 12)
    token, connection = tenant.issue()
    project = tenant.projects["platform"]
    fresh = cursor_make(scope=agent_scope(connection), project=project, query="webhook", offset=10)
    old = cursor_make(
        scope=agent_scope(connection),
        project=project,
        query="webhook",
        offset=10,
        issued_at=time.time() - 3600,
    )
    client = sdk(token, mode)
    assert client.ok("search_memory", {"project_id": "platform", "query": "webhook", "cursor": fresh})[
        "results"
    ]
    error = client.error("search_memory", {"project_id": "platform", "query": "webhook", "cursor": old})
    assert error["code"] == "invalid_cursor"
    assert "expired" in error["message"]


def _flip(cursor: str, index: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[index] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def _made_with_another_key(cursor: str, scope: Any, project: Any) -> str:
    with override_settings(SECRET_KEY=new_key()):
        return cursor_make(scope=scope, project=project, query="webhook", offset=10)


@pytest.mark.parametrize(
    "forge",
    [
        lambda c, *_: c[:-1] + ("A" if c[-1] != "A" else "B"),
        lambda c, *_: _flip(c, 20),  # a ciphertext bit: the offset or an id, were it readable
        lambda c, *_: _flip(c, 5),  # a nonce bit
        lambda c, *_: c[::-1],
        lambda c, *_: c[:40],
        _made_with_another_key,
        lambda c, *_: signing.dumps(
            {"o": 10, "w": 1, "c": 1, "p": 1, "q": ""}, salt="unforgetter.search.cursor.v1"
        ),
        lambda c, *_: base64.urlsafe_b64encode(b"\x02" + b"\x00" * 80).decode(),
        lambda c, *_: "." * 500,
    ],
    ids=[
        "tampered",
        "ciphertext-bit",
        "nonce-bit",
        "reversed",
        "truncated",
        "other-key",
        "old-signed-format",
        "zeros",
        "dots",
    ],
)
def test_a_forged_cursor_is_refused(tenant: Tenant, sdk, mode: str, forge) -> None:
    _items(tenant, "platform", 12)
    token, connection = tenant.issue()
    client = sdk(token, mode)
    cursor = client.ok("search_memory", {"project_id": "platform", "query": "webhook"})["cursor"]
    error = client.error(
        "search_memory",
        {
            "project_id": "platform",
            "query": "webhook",
            "cursor": forge(cursor, agent_scope(connection), tenant.projects["platform"]),
        },
    )
    assert error["code"] == "invalid_cursor"


def test_a_cursor_forged_far_past_the_end_yields_an_empty_page(tenant: Tenant, sdk, mode: str) -> None:
    _items(tenant, "platform", 3)
    token, connection = tenant.issue()
    cursor = cursor_make(
        scope=agent_scope(connection), project=tenant.projects["platform"], query="webhook", offset=10**9
    )
    result = sdk(token, mode).call(
        "search_memory", {"project_id": "platform", "query": "webhook", "cursor": cursor}
    )
    assert result.structured_content is not None
    assert not result.is_error, result.structured_content
    assert result.structured_content["results"] == []
    assert "cursor" not in result.structured_content


def test_search_is_limited_to_the_selected_project(tenant: Tenant, sdk, mode: str) -> None:
    mine = _items(tenant, "platform", 2, word="kafka")
    _items(tenant, "handbook", 2, word="kafka")
    token, _ = tenant.issue()
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": "kafka"})
    assert {r["ref"] for r in page["results"]} == mine


def test_only_current_items_are_found(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    current = add_item(platform, "Kafka topics are named after their producer.")
    add_item(platform, "Kafka topics used to be named after teams.", state="retracted")
    add_item(platform, "Kafka lag alert thresholds: who owns them?", kind="thread", state="closed")
    open_thread = add_item(platform, "Should kafka move to a managed service?", kind="thread")
    token, _ = tenant.issue()
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": "kafka"})
    assert {r["ref"] for r in page["results"]} == {current.ref, open_thread.ref}


def test_a_cursor_reveals_no_internal_id_and_survives_a_key_rotation(tenant: Tenant, sdk, mode: str) -> None:
    _items(tenant, "platform", 12)
    token, connection = tenant.issue()
    client = sdk(token, mode)
    first = client.ok("search_memory", {"project_id": "platform", "query": "webhook"})["cursor"]
    again = client.ok("search_memory", {"project_id": "platform", "query": "webhook"})["cursor"]
    assert first != again, "a fresh nonce each time: equal positions do not show as equal cursors"
    raw = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4))
    project = tenant.projects["platform"]
    for value in (tenant.workspace.pk, connection.pk, project.pk, 10):
        assert value.to_bytes(8, "big") not in raw
    assert b"webhook" not in raw
    for piece in first.split(":"):
        with pytest.raises(Exception):  # noqa: B017, PT011 - nothing in it decodes to a payload
            signing.loads(piece)
    old_key = settings.SECRET_KEY
    with override_settings(SECRET_KEY=new_key(), SECRET_KEY_FALLBACKS=[old_key]):
        page = client.ok("search_memory", {"project_id": "platform", "query": "webhook", "cursor": first})
    assert page["results"]
    with override_settings(SECRET_KEY=new_key(), SECRET_KEY_FALLBACKS=[]):
        refused = client.error(
            "search_memory", {"project_id": "platform", "query": "webhook", "cursor": first}
        )
    assert refused["code"] == "invalid_cursor"


def _engineering_notes(tenant: Tenant) -> dict[str, str]:
    platform = tenant.projects["platform"]
    notes = {
        "retry": "invoice-worker retries failed payments 5 times with exponential backoff.",
        "owner": "The invoice-worker is owned by the billing team.",
        "deploy": "Deploys of the web frontend go out every Tuesday.",
        "backoff": "The email sender uses a fixed backoff of 30 seconds.",
    }
    for i in range(12):
        add_item(platform, f"Service {i} logs to the central collector.")
    return {key: add_item(platform, text).ref for key, text in notes.items()}


def test_a_question_finds_the_fact_whose_words_it_uses(tenant: Tenant, sdk, mode: str) -> None:
    refs = _engineering_notes(tenant)
    token, _ = tenant.issue()
    question = "How many times does invoice-worker retry, and with what backoff?"
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": question})
    found = [r["ref"] for r in page["results"]]
    # The item with every telling word first; items with some of them after it.
    assert found[0] == refs["retry"]
    assert {refs["owner"], refs["backoff"]} <= set(found)
    assert refs["deploy"] not in found


def test_stop_words_and_punctuation_do_not_change_the_answer(tenant: Tenant, sdk, mode: str) -> None:
    refs = _engineering_notes(tenant)
    token, _ = tenant.issue()
    client = sdk(token, mode)
    asked = client.ok("search_memory", {"project_id": "platform", "query": "Who owns the invoice-worker?!"})
    keywords = client.ok("search_memory", {"project_id": "platform", "query": "owned invoice worker"})
    assert asked["results"][0]["ref"] == keywords["results"][0]["ref"] == refs["owner"]
