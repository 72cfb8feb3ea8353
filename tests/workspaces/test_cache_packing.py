"""Large cached values are stored compressed and read back equal; counters stay counters."""

from __future__ import annotations

import pickle

import pytest
from django.core.cache import cache as shared

from workspaces.caches import PACK_MIN_BYTES, cache

BUNDLE = {
    "facts": [{"id": i, "text": f"We deploy service {i} blue-green behind the gateway."} for i in range(200)],
    "task": "deploy a service",
}


@pytest.fixture(autouse=True)
def _empty_caches() -> None:
    cache.reset()
    cache.clear()


def test_a_large_value_is_stored_compressed_and_read_back_equal() -> None:
    assert len(pickle.dumps(BUNDLE)) >= PACK_MIN_BYTES
    cache.set("unforgetter:test:bundle", BUNDLE, timeout=60)
    stored = shared.get("unforgetter:test:bundle")
    assert isinstance(stored, bytes)
    assert len(stored) < len(pickle.dumps(BUNDLE)) / 2
    assert cache.get("unforgetter:test:bundle") == BUNDLE


def test_small_values_and_counters_are_stored_as_they_are() -> None:
    cache.set("unforgetter:test:small", {"a": 1}, timeout=60)
    assert shared.get("unforgetter:test:small") == {"a": 1}
    assert cache.add("unforgetter:test:counter", 0, timeout=60)
    assert cache.incr("unforgetter:test:counter") == 1
    cache.set("unforgetter:test:lock", 12.5, timeout=60)
    assert cache.get("unforgetter:test:lock") == 12.5


def test_a_missing_key_gives_the_default() -> None:
    assert cache.get("unforgetter:test:missing", "none") == "none"
