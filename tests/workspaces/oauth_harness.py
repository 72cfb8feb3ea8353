"""Driving the OAuth flow against the live server, the way an MCP client and its user would.

The MCP SDK's `OAuthClientProvider` does discovery, registration, PKCE and the token exchange;
where a browser would show the consent page, `ConsentDriver` plays the signed-in owner with a
plain HTTP client carrying a real Django session cookie: it GETs the authorize URL, fills in the
consent form and POSTs it, and hands the client the redirect it got back.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
from django.conf import settings
from django.test import Client as DjangoClient
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.types import CallToolResult

CALLBACK = "http://127.0.0.1:9/callback"


def session_cookies(user: Any) -> dict[str, str]:
    """A real, stored Django session for `user`, as the cookies a browser would send."""
    client = DjangoClient()
    client.force_login(user)
    return {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}


class _FormParser(HTMLParser):
    """The consent form's inputs: hidden values, and which checkbox/radio/select options exist."""

    def __init__(self) -> None:
        super().__init__()
        self.in_form = False
        self.hidden: dict[str, str] = {}
        self.options: dict[str, list[str]] = {}
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag == "form" and attributes.get("id") == "authorizationForm":
            self.in_form = True
        if not self.in_form:
            return
        if tag == "input":
            name = attributes.get("name", "")
            kind = attributes.get("type", "text")
            if kind == "hidden":
                self.hidden[name] = attributes.get("value", "")
            elif kind in ("checkbox", "radio"):
                self.options.setdefault(name, []).append(attributes.get("value", "on"))
        elif tag == "select":
            self._select = attributes.get("name")
        elif tag == "option" and self._select:
            self.options.setdefault(self._select, []).append(attributes.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.in_form = False
        elif tag == "select":
            self._select = None


@dataclass
class Consent:
    """What the owner chooses on the consent page (None: leave the page's default)."""

    approve: bool = True
    role: str = "reader"
    zone: str | None = "claude"
    data_classes: list[str] = field(default_factory=lambda: ["public", "internal"])
    projects: list[str] | None = None  # None: all projects
    workspace: str | None = None


@dataclass
class ConsentDriver:
    """Plays the signed-in owner on the consent page."""

    base_url: str
    cookies: dict[str, str]
    consent: Consent = field(default_factory=Consent)
    pages: list[str] = field(default_factory=list)
    location: str | None = None

    def run(self, authorize_url: str) -> httpx.Response:
        """GET the authorize URL; if it shows the consent page, submit it. The last response."""
        with httpx.Client(cookies=self.cookies, timeout=30, follow_redirects=False) as http:
            page = http.get(authorize_url)
            if page.status_code != 200:
                self.location = page.headers.get("location")
                return page
            self.pages.append(page.text)
            parser = _FormParser()
            parser.feed(page.text)
            data: list[tuple[str, str]] = list(parser.hidden.items())
            choice = self.consent
            if choice.workspace is not None:
                data = [(k, v) for k, v in data if k != "workspace"] + [("workspace", choice.workspace)]
            if choice.approve:
                data.append(("allow", "Authorize"))
                data.append(("role", choice.role))
                if choice.zone is not None:
                    data.append(("zone", choice.zone))
                data += [("data_classes", c) for c in choice.data_classes]
                if choice.projects is None:
                    data.append(("all_projects", "on"))
                else:
                    data += [("projects", p) for p in choice.projects]
            form: dict[str, list[str]] = {}
            for key, value in data:
                form.setdefault(key, []).append(value)
            response = http.post(
                authorize_url, data=form, headers={"Referer": authorize_url, "Origin": self.base_url}
            )
            self.location = response.headers.get("location")
            return response

    async def redirect_handler(self, authorize_url: str) -> None:
        await asyncio.to_thread(self.run, authorize_url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.location, "the authorization server did not redirect back"
        query = parse_qs(urlsplit(self.location).query)
        assert "code" in query, query
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class OAuthMCPClient:
    """An MCP SDK client that authenticates with OAuth, consenting through a ConsentDriver."""

    def __init__(
        self, mcp_url: str, driver: ConsentDriver, *, client_name: str = "Claude Code (tests)"
    ) -> None:
        self.mcp_url = mcp_url
        self.driver = driver
        self.storage = MemoryStorage()
        self.client_name = client_name

    def provider(self) -> OAuthClientProvider:
        metadata = OAuthClientMetadata(
            client_name=self.client_name,
            redirect_uris=[CALLBACK],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )
        return OAuthClientProvider(
            server_url=self.mcp_url,
            client_metadata=metadata,
            storage=self.storage,
            redirect_handler=self.driver.redirect_handler,
            callback_handler=self.driver.callback_handler,
        )

    async def _run(self, action: Any, mode: str) -> Any:
        async with httpx2.AsyncClient(auth=self.provider(), timeout=30) as http:
            transport = streamable_http_client(self.mcp_url, http_client=http)
            async with Client(transport, mode=mode, cache=None) as client:
                return await action(client)

    def call(
        self, tool: str, arguments: dict[str, Any] | None = None, mode: str = "legacy"
    ) -> CallToolResult:
        async def action(client: Client) -> CallToolResult:
            return await client.call_tool(tool, arguments or {})

        result: CallToolResult = asyncio.run(self._run(action, mode))
        return result


# --- a hand-driven client, for the refusals the SDK would never send ---------------------------


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@dataclass
class HandClient:
    """A registered public client driving /oauth/ by hand."""

    base_url: str
    client_id: str
    redirect_uri: str = CALLBACK

    @classmethod
    def register(cls, base_url: str, **metadata: Any) -> HandClient:
        body = {
            "client_name": "Hand client",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        response = httpx.post(f"{base_url}/oauth/register/", json=body, timeout=30)
        assert response.status_code == 201, response.text
        client_id = response.json()["client_id"]
        return cls(base_url=base_url, client_id=client_id, redirect_uri=body["redirect_uris"][0])

    def authorize_url(self, **params: str | None) -> str:
        query: dict[str, str] = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "state": "st-1",
            "scope": "memory:read memory:propose",
        }
        for key, value in params.items():
            if value is None:
                query.pop(key, None)
            else:
                query[key] = value
        return f"{self.base_url}/oauth/authorize/?{urlencode(query)}"

    def token(self, **data: str) -> httpx.Response:
        body = {"client_id": self.client_id, **data}
        return httpx.post(f"{self.base_url}/oauth/token/", data=body, timeout=30)

    def obtain(
        self, driver: ConsentDriver, resource: str, scope: str = "memory:read memory:propose"
    ) -> dict[str, Any]:
        """The whole code flow with S256 PKCE for `resource`: the token response."""
        verifier, challenge = pkce_pair()
        url = self.authorize_url(
            code_challenge=challenge, code_challenge_method="S256", resource=resource, scope=scope
        )
        driver.run(url)
        assert driver.location is not None
        code = parse_qs(urlsplit(driver.location).query)["code"][0]
        response = self.token(
            grant_type="authorization_code", code=code, redirect_uri=self.redirect_uri, code_verifier=verifier
        )
        assert response.status_code == 200, response.text
        tokens: dict[str, Any] = response.json()
        return tokens
