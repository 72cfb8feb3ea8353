"""System checks for configuration that is valid Python but wrong for Unforgetter."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from workspaces.net import is_loopback_host


@register()
def check_public_url(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    public = urlsplit(settings.PUBLIC_URL)
    if public.scheme != "https" and not is_loopback_host(public.hostname or ""):
        return [
            Warning(
                f"PUBLIC_URL {settings.PUBLIC_URL} is plain HTTP on a non-loopback host.",
                hint="OAuth clients, claude.ai and ChatGPT need HTTPS: put TLS in front and set PUBLIC_URL.",
                id="unforgetter.W001",
            )
        ]
    if public.path not in ("", "/"):
        return [
            Error(
                "PUBLIC_URL must be an origin without a path.",
                hint="e.g. https://memory.example.com; /mcp is appended to it.",
                id="unforgetter.E001",
            )
        ]
    return []


@register()
def check_product_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for key in ("CONTEXT_MAX_ITEMS", "CONTEXT_MAX_CHARS", "SEARCH_PAGE_SIZE"):
        value = settings.UNFORGETTER.get(key)
        if not isinstance(value, int) or value <= 0:
            errors.append(Error(f"UNFORGETTER[{key!r}] must be a positive integer.", id="unforgetter.E002"))
    return errors
