"""System checks for configuration that is valid Python but wrong for Unforgetter."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from workspaces.keys import key_weakness
from workspaces.net import is_loopback_host

# The tag of these checks, so that a command can run them without Django's costlier ones (the URL
# checks import every view of the site): `manage.py check` and `migrate` still run them all.
CONFIG = "unforgetter"


@register(CONFIG)
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


@register(CONFIG)
def check_product_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for key in ("CONTEXT_MAX_ITEMS", "CONTEXT_MAX_CHARS", "SEARCH_PAGE_SIZE"):
        value = settings.UNFORGETTER.get(key)
        if not isinstance(value, int) or value <= 0:
            errors.append(Error(f"UNFORGETTER[{key!r}] must be a positive integer.", id="unforgetter.E002"))
    return errors


@register(CONFIG)
def check_keys(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A public, short or repetitive SECRET_KEY or LEDGER_KEY is an error outside tests.

    With either, anyone could forge session cookies, search cursors or ledger attestations.
    """
    if settings.TESTING:
        return []
    keys = {
        "SECRET_KEY": settings.SECRET_KEY,
        "LEDGER_KEY": settings.UNFORGETTER["LEDGER_KEY"],
        **{f"SECRET_KEY_FALLBACKS[{i}]": key for i, key in enumerate(settings.SECRET_KEY_FALLBACKS)},
    }
    errors: list[CheckMessage] = []
    for name, value in keys.items():
        weakness = key_weakness(value)
        if weakness:
            errors.append(
                Error(
                    f"{name} must not be used: {weakness}.",
                    hint="Unset it to use this install's generated key file, or set a new random value: "
                    "python -c 'import secrets; print(secrets.token_urlsafe(48))'. See README, Keys.",
                    id="unforgetter.E003",
                )
            )
    if settings.UNFORGETTER["LEDGER_KEY"] == settings.SECRET_KEY:
        errors.append(
            Error(
                "LEDGER_KEY must differ from SECRET_KEY.",
                hint="The ledger must stay verifiable when SECRET_KEY is rotated.",
                id="unforgetter.E004",
            )
        )
    return errors
