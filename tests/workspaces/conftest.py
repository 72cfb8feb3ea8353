from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from tests.conftest import LiveServer


@pytest.fixture
def oauth_live(live: LiveServer, settings: Any) -> LiveServer:
    """The live server as an OAuth authorization server: its issuer is the live URL.

    The registration throttle's counters live in the cache, so each test starts with none.
    """
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live.url}
    cache.clear()
    return live
