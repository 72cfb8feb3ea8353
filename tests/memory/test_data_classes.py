"""Items of a class the credential lacks are never served: not in results, counts, excerpts or pointers."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from django.conf import settings
from django.test import override_settings

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


SECRET_WORD = "zeppelin"


@pytest.fixture
def hidden(tenant: Tenant) -> dict[str, str]:
    """A restricted and a confidential item in the internal `platform` project, by class."""
    platform = tenant.projects["platform"]
    return {
        "restricted": add_item(
            platform, f"Restricted: the {SECRET_WORD} salary band is 200k.", data_class="restricted"
        ).ref,
        "confidential": add_item(
            platform, f"Confidential: customer {SECRET_WORD} had an outage.", data_class="confidential"
        ).ref,
        "restricted_policy": add_item(
            platform,
            f"Restricted policy: {SECRET_WORD} contracts stay in the vault.",
            kind="policy",
            data_class="restricted",
        ).ref,
        "restricted_method": add_item(
            platform, f"How to pay {SECRET_WORD}: wire on the 25th.", kind="method", data_class="restricted"
        ).ref,
        "restricted_thread": add_item(
            platform, f"Should {SECRET_WORD} get a raise?", kind="thread", data_class="restricted"
        ).ref,
    }


def _assert_absent(payload: object, refs: list[str], *, word: str | None = SECRET_WORD) -> None:
    text = json.dumps(payload)
    for ref in refs:
        assert ref not in text
    for secret in ("salary", "vault", "wire on the", "raise?") + ((word,) if word else ()):
        assert secret not in text.lower()


def test_restricted_items_are_absent_from_get_context(tenant: Tenant, hidden, sdk, mode: str) -> None:
    visible = add_item(tenant.projects["platform"], "Public note: the airship hangar opens at nine.")
    token, _ = tenant.issue(data_classes=["public", "internal", "confidential"])
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "CONTEXT_MAX_ITEMS": 1}):
        bundle = sdk(token, mode).ok(
            "get_context", {"project_id": "platform", "task": f"{SECRET_WORD} salary"}
        )
    restricted = [
        hidden["restricted"],
        hidden["restricted_policy"],
        hidden["restricted_method"],
        hidden["restricted_thread"],
    ]
    _assert_absent({k: v for k, v in bundle.items() if k != "task"}, restricted, word=None)
    assert hidden["confidential"] in [i["ref"] for i in all_items(bundle)] + [
        p["ref"] for p in bundle["pointers"]
    ]
    record = served_record(bundle["context_id"])
    assert not set(record.refs) & set(restricted)
    assert visible.ref


def test_confidential_items_are_absent_for_a_public_and_internal_token(
    tenant: Tenant, hidden, sdk, mode: str
) -> None:
    token, _ = tenant.issue(data_classes=["public", "internal"])
    client = sdk(token, mode)
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "CONTEXT_MAX_ITEMS": 0}):
        bundle = client.ok(
            "get_context", {"project_id": "platform", "task": f"{SECRET_WORD} outage customer"}
        )
    _assert_absent({k: v for k, v in bundle.items() if k != "task"}, list(hidden.values()))
    assert bundle["pointers"] == []
    page = client.ok("search_memory", {"project_id": "platform", "query": SECRET_WORD})
    assert page == {"results": []}


@pytest.mark.parametrize("which", ["restricted", "confidential", "restricted_policy", "restricted_thread"])
def test_retrieval_by_ref_of_a_hidden_item_finds_nothing(
    tenant: Tenant, hidden, sdk, mode: str, which: str
) -> None:
    token, _ = tenant.issue(data_classes=["public", "internal"])
    result = sdk(token, mode).call("search_memory", {"project_id": "platform", "query": hidden[which]})
    assert result.structured_content is not None
    _assert_absent(result.structured_content, [hidden[which]])
    # Indistinguishable from a ref that never existed.
    missing = sdk(token, mode).call(
        "search_memory", {"project_id": "platform", "query": "fact_zzzzzzzzzzzzzz"}
    )
    assert result.structured_content == missing.structured_content


def test_hidden_matches_do_not_count_towards_pages(tenant: Tenant, sdk, mode: str) -> None:
    platform = tenant.projects["platform"]
    visible = {add_item(platform, f"Zeppelin checklist {i} is public.").ref for i in range(10)}
    for i in range(15):
        add_item(platform, f"Zeppelin secret {i} stays hidden.", data_class="restricted")
        add_item(platform, f"Zeppelin customer {i} is confidential.", data_class="confidential")
    token, _ = tenant.issue(data_classes=["public", "internal"])
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": "zeppelin"})
    assert {r["ref"] for r in page["results"]} == visible
    assert "cursor" not in page
    assert all(r["data_class"] in ("public", "internal") for r in page["results"])


def test_search_excerpts_never_show_hidden_text(tenant: Tenant, hidden, sdk, mode: str) -> None:
    add_item(tenant.projects["platform"], f"Public: the {SECRET_WORD} museum is open.")
    token, _ = tenant.issue(data_classes=["public", "internal"])
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": SECRET_WORD})
    assert len(page["results"]) == 1
    assert "museum" in page["results"][0]["excerpt"]
    for ref in hidden.values():
        assert ref not in json.dumps(page)
    assert "salary" not in json.dumps(page)
    assert "outage" not in json.dumps(page)


def test_a_confidential_token_sees_confidential_but_never_restricted(
    tenant: Tenant, hidden, sdk, mode: str
) -> None:
    token, _ = tenant.issue(data_classes=["public", "internal", "confidential"])
    page = sdk(token, mode).ok("search_memory", {"project_id": "platform", "query": SECRET_WORD})
    assert [r["ref"] for r in page["results"]] == [hidden["confidential"]]
    assert page["results"][0]["data_class"] == "confidential"
