"""The console's newer pages in Chromium: quickstarts and their copy buttons, trust zones, export
and deletion with its receipt, and the consent page in the console's style.

Same set-up as test_console_browser.py (Debian's Chromium through Playwright, database work off
the event loop); screenshots go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.services import fact_create
from tests.conftest import LiveServer, make_tenant
from tests.e2e.test_console_browser import (
    ARGS,
    CHROMIUM,
    DESKTOP,
    PHONE,
    SCREENSHOTS,
    off_loop,
    shot,
    sign_in,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's Chromium is not installed at /usr/bin/chromium"
    ),
]


def _acme() -> str:
    tenant = make_tenant("acme")
    fact_create(
        project=tenant.projects["platform"], kind="decision", text="We deploy blue-green.", actor="ana"
    )
    return str(tenant.owner.username)


@pytest.fixture
def owner(live: LiveServer, tmp_path: Path) -> Iterator[str]:
    from django.conf import settings
    from django.test import override_settings

    # The live server runs in this process: its exports go to the test's own folder.
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "EXPORTS_DIR": tmp_path / "exports"}):
        yield off_loop(_acme)


@pytest.fixture
def browser(owner: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _errors(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return errors


def test_quickstarts_copy_what_they_show(live: LiveServer, owner: str, browser: Any) -> None:
    context = browser.new_context(viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    errors = _errors(page)
    page.goto(f"{live.url}/")
    page.wait_for_url(f"{live.url}/console/docs/mcp/")
    assert page.locator("#mcp-url").inner_text() == f"{live.url}/mcp"
    shot(page, "quickstart-1280")
    for target in ("#snippet-1", "#agent-brief", "#snapshot-curl"):
        page.locator(f'button[data-copy="{target}"]').click()
        expect(page.locator(f'button[data-copy="{target}"]')).to_have_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.locator(target).inner_text()
    assert "snapshot.md" in copied
    assert errors == []
    phone = browser.new_context(viewport=PHONE, is_mobile=True).new_page()
    phone.goto(f"{live.url}/console/docs/mcp/")
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(phone, "quickstart-390")
    context.close()


def test_owner_creates_a_zone_exports_and_deletes_the_workspace(
    live: LiveServer, owner: str, browser: Any, tmp_path: Path
) -> None:
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    page = context.new_page()
    errors = _errors(page)
    sign_in(page, live, owner)

    page.get_by_role("link", name="Trust zones").click()
    page.get_by_label("Name").fill("ci-bots")
    page.locator("#id_new-trust").select_option("low")
    page.locator("#id_new-max_token_ttl").fill("12h")
    page.get_by_role("button", name="Create zone").click()
    assert page.get_by_text("Created the ci-bots zone.").is_visible()
    assert page.get_by_role("heading", name="ci-bots").is_visible()
    shot(page, "zones-1280")

    page.get_by_role("link", name="Workspace", exact=True).click()
    assert page.get_by_text("30 days").first.is_visible()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download export").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    with zipfile.ZipFile(saved) as archive:
        manifest = json.loads(archive.read("acme/manifest.json"))
    assert [item["text"] for item in manifest["items"]] == ["We deploy blue-green."]
    shot(page, "workspace-1280")

    # The browser refuses a wrong slug before anything is sent (pattern), and nothing is deleted.
    page.get_by_label("Type acme to confirm").fill("acm")
    page.get_by_role("button", name="Delete workspace").click()
    assert page.url == f"{live.url}/console/w/acme/workspace/"
    page.get_by_label("Type acme to confirm").fill("acme")
    page.get_by_role("button", name="Delete workspace").click()
    page.wait_for_url(f"{live.url}/console/receipts/*/")
    assert page.get_by_role("heading", name="Deletion receipt: acme").is_visible()
    assert page.get_by_text("1 server-made export file(s)").first.is_visible()
    shot(page, "receipt-1280")
    assert errors == []
    # The workspace is gone for its owner too (the browser logs the 404 it was sent).
    assert page.goto(f"{live.url}/console/w/acme/").status == 404
    assert page.get_by_role("heading", name="Not found").is_visible()
    context.close()


def test_the_consent_page_wears_the_consoles_style(
    live: LiveServer, owner: str, browser: Any, settings: Any
) -> None:
    from django.core.cache import cache

    from tests.workspaces.oauth_harness import HandClient, pkce_pair

    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live.url}
    cache.clear()
    hand = HandClient.register(
        live.url, client_name="Cursor", redirect_uris=["http://127.0.0.1:33418/callback"]
    )
    _, challenge = pkce_pair()
    url = hand.authorize_url(
        code_challenge=challenge, code_challenge_method="S256", resource=f"{live.url}/mcp"
    )
    for viewport, name in ((DESKTOP, "consent-1280"), (PHONE, "consent-390")):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        errors = _errors(page)
        sign_in(page, live, owner)
        page.goto(url)
        assert page.get_by_role("heading", name="Connect Cursor to Unforgetter?").is_visible()
        # The console's card: its panel, border and radius, and bordered fieldsets, not bare HTML.
        card = page.locator("section.consent")
        assert card.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"
        assert card.evaluate("e => getComputedStyle(e).borderTopLeftRadius") != "0px"
        fieldset = page.locator(".consent-form fieldset").first
        assert fieldset.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"
        assert page.locator(".facts dt").first.evaluate("e => getComputedStyle(e).fontWeight") == "600"
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        assert page.get_by_role("button", name="Approve").is_visible()
        shot(page, name)
        assert errors == []
        context.close()
