"""Scopes as the MCP bridge sees them: the verifier's scopes and `require_scope`."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

from mcpbridge.auth import ConnectionTokenVerifier, require_scope
from tests.conftest import LiveServer, Tenant
from tests.mcp_client import MCPClient
from tests.workspaces.oauth_harness import Consent, ConsentDriver, HandClient, session_cookies
from workspaces.exceptions import ForbiddenScope
from workspaces.models import Connection
from workspaces.scope import AgentScope


def _verified_scopes(raw: str) -> list[str] | None:
    async def verify() -> list[str] | None:
        try:
            token = await ConnectionTokenVerifier().verify_token(raw)
        finally:
            await sync_to_async(connections.close_all)()
        return None if token is None else token.scopes

    return asyncio.run(verify())


@pytest.mark.parametrize(
    ("role", "expected"),
    [("reader", ["memory:read"]), ("contributor", ["memory:propose", "memory:read"])],
)
def test_oauth_token_scopes_are_what_was_consented_for_the_role(
    oauth_live: LiveServer, tenant: Tenant, role: str, expected: list[str]
) -> None:
    hand = HandClient.register(oauth_live.url)
    driver = ConsentDriver(oauth_live.url, session_cookies(tenant.owner), Consent(role=role))
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    assert _verified_scopes(tokens["access_token"]) == expected


def test_role_narrows_a_token_that_claims_more(oauth_live: LiveServer, tenant: Tenant) -> None:
    hand = HandClient.register(oauth_live.url)
    driver = ConsentDriver(oauth_live.url, session_cookies(tenant.owner), Consent(role="contributor"))
    tokens = hand.obtain(driver, oauth_live.mcp_url)
    Connection.objects.filter(kind=Connection.Kind.OAUTH).update(role=Connection.Role.READER)
    assert _verified_scopes(tokens["access_token"]) == ["memory:read"]


def _run_with_token(raw: str, scope: str) -> AgentScope:
    """The scope require_scope grants a request carrying this token, or its refusal."""

    async def call() -> AgentScope:
        try:
            token = await ConnectionTokenVerifier().verify_token(raw)
        finally:
            # The verifier's thread keeps its own connection; close it so the test database
            # can be dropped at the end of the run.
            await sync_to_async(connections.close_all)()
        assert token is not None
        reset = auth_context_var.set(AuthenticatedUser(token))
        try:
            return require_scope(scope)
        finally:
            auth_context_var.reset(reset)

    return asyncio.run(call())


def test_require_scope_refuses_a_reader_proposing(tenant: Tenant, live: LiveServer) -> None:
    token, _ = tenant.issue(role=Connection.Role.READER)
    _run_with_token(token, "memory:read")
    with pytest.raises(ForbiddenScope) as refused:
        _run_with_token(token, "memory:propose")
    assert refused.value.code == "forbidden_scope"


def test_require_scope_lets_a_contributor_propose(tenant: Tenant, live: LiveServer) -> None:
    token, connection = tenant.issue(role=Connection.Role.CONTRIBUTOR)
    granted = _run_with_token(token, "memory:propose")
    assert granted.connection_id == connection.pk
    assert granted.can_propose


def test_a_contributor_token_consented_for_reading_only_cannot_propose(
    oauth_live: LiveServer, tenant: Tenant
) -> None:
    hand = HandClient.register(oauth_live.url)
    driver = ConsentDriver(oauth_live.url, session_cookies(tenant.owner), Consent(role="contributor"))
    tokens = hand.obtain(driver, oauth_live.mcp_url, scope="memory:read")
    client = MCPClient(oauth_live.mcp_url, tokens["access_token"])
    assert [p["id"] for p in client.ok("list_projects")["projects"]]
    refused = client.error(
        "propose_memory",
        {
            "project_id": "platform",
            "request_id": "scope-check-0001",
            "change": {"op": "add_fact", "text": "Deploys happen on Tuesdays."},
            "evidence": [{"text": "Seen in the release calendar.", "trust": "trusted"}],
        },
    )
    assert refused["code"] == "forbidden_scope"
    assert "memory:propose" in refused["message"]
