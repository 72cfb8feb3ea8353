from __future__ import annotations

from typing import Any

from django.test import override_settings

from workspaces.checks import check_product_limits, check_public_url


def test_plain_http_public_url_on_a_real_host_warns() -> None:
    with override_settings(PUBLIC_URL="http://memory.example.com"):
        assert [m.id for m in check_public_url()] == ["unforgetter.W001"]
    with override_settings(PUBLIC_URL="https://memory.example.com"):
        assert check_public_url() == []
    with override_settings(PUBLIC_URL="https://memory.example.com/sub"):
        assert [m.id for m in check_public_url()] == ["unforgetter.E001"]


def test_non_positive_bundle_limits_are_errors(settings: Any) -> None:
    settings.UNFORGETTER = {**settings.UNFORGETTER, "CONTEXT_MAX_ITEMS": 0}
    assert [m.id for m in check_product_limits()] == ["unforgetter.E002"]
